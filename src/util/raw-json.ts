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

/** Index just past the JSON value that starts at `i`. */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    while (i < text.length) {
      const ch = text[i];
      if (ch === '"') {
        i = skipString(text, i);
        continue;
      }
      if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < text.length && !/[\s,}\]]/.test(text[i]!)) i++;
  return i;
}

export interface Span {
  start: number;
  end: number;
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
    const end = skipValue(text, start);
    spans.set(key, { start, end });
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
    const end = skipValue(text, i);
    spans.push({ start: i, end });
    i = skipWhitespace(text, end);
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return spans;
}
