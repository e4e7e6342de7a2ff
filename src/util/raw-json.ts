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

const LITERALS: Record<string, string> = { t: 'true', f: 'false', n: 'null' };

/** Index just past the string literal at `i`, or -(index of the fault) - 1 when it is malformed. */
function scanString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; ) {
    const c = text.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c < 0x20) return -j - 1;
    if (c === 0x5c) {
      const kind = text[j + 1];
      if (kind === 'u') {
        for (let k = j + 2; k < j + 6; k++) if (!/[0-9a-fA-F]/.test(text[k] ?? '')) return -k - 1;
        j += 6;
      } else if (kind !== undefined && '"\\/bfnrt'.includes(kind)) j += 2;
      else return -(j + 1) - 1;
    } else j++;
  }
  return -text.length - 1;
}

const isDigit = (text: string, j: number) => j < text.length && text[j]! >= '0' && text[j]! <= '9';

/** Index just past the number or literal at `i`, or -(index of the fault) - 1. */
function scanScalar(text: string, i: number): number {
  const literal = LITERALS[text[i]!];
  if (literal) {
    for (let k = 0; k < literal.length; k++) if (text[i + k] !== literal[k]) return -(i + k) - 1;
    return i + literal.length;
  }
  let j = i;
  if (text[j] === '-') j++;
  if (text[j] === '0') j++;
  else if (isDigit(text, j)) while (isDigit(text, j)) j++;
  else return -j - 1;
  if (text[j] === '.') {
    if (!isDigit(text, ++j)) return -j - 1;
    while (isDigit(text, j)) j++;
  }
  if (text[j] === 'e' || text[j] === 'E') {
    j++;
    if (text[j] === '+' || text[j] === '-') j++;
    if (!isDigit(text, j)) return -j - 1;
    while (isDigit(text, j)) j++;
  }
  return j;
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
          const end = scanScalar(text, i);
          if (end < 0) return -end - 1;
          i = end;
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
