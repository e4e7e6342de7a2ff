/**
 * Finds where JSON values sit in the request text, so a payload can be stored as the exact
 * bytes the caller sent (JSON.parse would normalise numbers, escapes and whitespace, and the
 * partner's signature must cover what the producer wrote). The input has already passed
 * JSON.parse, so this scanner can assume well-formed JSON.
 */

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

function skipWhitespace(text: string, i: number): number {
  while (i < text.length && WHITESPACE.has(text.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string literal that starts at `i` (a `"`). indexOf keeps long strings cheap. */
function skipString(text: string, i: number): number {
  let quote = text.indexOf('"', i + 1);
  while (quote !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    quote = text.indexOf('"', quote + 1);
  }
  return text.length;
}

/**
 * Index just past the JSON value that starts at `i`, and its nesting depth (a scalar is 0, `[]`
 * is 1). The depth comes free with the scan, so a payload's depth is bounded without another pass.
 */
function skipValue(text: string, i: number): [end: number, depth: number] {
  const c = text[i];
  if (c === '"') return [skipString(text, i), 0];
  if (c === '{' || c === '[') {
    let depth = 0;
    let maxDepth = 0;
    while (i < text.length) {
      const ch = text[i];
      if (ch === '"') {
        i = skipString(text, i);
        continue;
      }
      if (ch === '{' || ch === '[') {
        depth++;
        if (depth > maxDepth) maxDepth = depth;
      } else if (ch === '}' || ch === ']') {
        depth--;
        if (depth === 0) return [i + 1, maxDepth];
      }
      i++;
    }
    return [i, maxDepth];
  }
  while (i < text.length && !/[\s,}\]]/.test(text[i]!)) i++;
  return [i, 0];
}

export interface Span {
  start: number;
  end: number;
  /** Nesting depth of the value: 0 for a scalar, 1 for `[]` or `{}`. */
  depth: number;
}

/** Spans of the members of the object starting at `i` (last one wins on duplicate keys, like JSON.parse). */
export function objectMemberSpans(text: string, i = skipWhitespace(text, 0)): Map<string, Span> {
  const spans = new Map<string, Span>();
  if (text[i] !== '{') return spans;
  i = skipWhitespace(text, i + 1);
  while (i < text.length && text[i] !== '}') {
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWhitespace(text, keyEnd) + 1; // past ':'
    const start = skipWhitespace(text, i);
    const [end, depth] = skipValue(text, start);
    spans.set(key, { start, end, depth });
    i = skipWhitespace(text, end);
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return spans;
}

/** Spans of the elements of the array starting at `i`. */
export function arrayElementSpans(text: string, i: number): Span[] {
  const spans: Span[] = [];
  if (text[i] !== '[') return spans;
  i = skipWhitespace(text, i + 1);
  while (i < text.length && text[i] !== ']') {
    const [end, depth] = skipValue(text, i);
    spans.push({ start: i, end, depth });
    i = skipWhitespace(text, end);
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return spans;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/** Index just past the string literal at `i`, or -(index of the fault) - 1 when it is malformed. */
function scanString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; ) {
    const c = text.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c < 0x20) return -j - 1;
    if (c === 0x5c) {
      ESCAPE.lastIndex = j;
      if (!ESCAPE.test(text)) return -j - 1;
      j = ESCAPE.lastIndex;
    } else j++;
  }
  return -text.length - 1;
}

/**
 * Where JSON.parse would first fail on `text` (text.length for an early end), or -1 when the
 * text is valid. Iterative, so no nesting depth can overflow it. It exists so that a syntax
 * error can be reported by position alone: V8's message quotes the text around the fault, and
 * the text may be a payload.
 */
export function jsonSyntaxErrorAt(text: string): number {
  // Stack of open containers; `expect` is what may come next.
  const stack: ('{' | '[')[] = [];
  let expect: 'value' | 'value_or_end' | 'key' | 'key_or_end' | 'colon' | 'comma_or_end' = 'value';
  let i = skipWhitespace(text, 0);
  for (;;) {
    if (expect === 'comma_or_end' && stack.length === 0) return i < text.length ? i : -1;
    if (i >= text.length) return text.length;
    const c = text[i]!;
    switch (expect) {
      case 'value':
      case 'value_or_end':
        if (expect === 'value_or_end' && c === ']') {
          stack.pop();
          i++;
          expect = 'comma_or_end';
        } else if (c === '{' || c === '[') {
          stack.push(c);
          i++;
          expect = c === '{' ? 'key_or_end' : 'value_or_end';
        } else if (c === '"') {
          const end = scanString(text, i);
          if (end < 0) return -end - 1;
          i = end;
          expect = 'comma_or_end';
        } else {
          const pattern = c === '-' || (c >= '0' && c <= '9') ? NUMBER : LITERAL;
          pattern.lastIndex = i;
          if (!pattern.test(text)) return i;
          i = pattern.lastIndex;
          expect = 'comma_or_end';
        }
        break;
      case 'key':
      case 'key_or_end':
        if (expect === 'key_or_end' && c === '}') {
          stack.pop();
          i++;
          expect = 'comma_or_end';
        } else if (c === '"') {
          const end = scanString(text, i);
          if (end < 0) return -end - 1;
          i = end;
          expect = 'colon';
        } else return i;
        break;
      case 'colon':
        if (c !== ':') return i;
        i++;
        expect = 'value';
        break;
      case 'comma_or_end': {
        const open = stack.at(-1);
        if (c === ',') expect = open === '{' ? 'key' : 'value';
        else if ((c === '}' && open === '{') || (c === ']' && open === '[')) stack.pop();
        else return i;
        i++;
        break;
      }
    }
    i = skipWhitespace(text, i);
  }
}
