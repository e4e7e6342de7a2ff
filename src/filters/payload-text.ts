/**
 * The text a payload is filtered as. Filters are evaluated on `jsonb` (filters/jsonpath.ts), and
 * jsonb refuses two things valid JSON may hold: the escape `\u0000` and an unpaired surrogate
 * escape such as `\ud800`. hookpost accepts and delivers such payloads byte for byte; for
 * filtering only, those escapes read as U+FFFD. No filter can name either character (syntax.ts
 * refuses them), so the only comparisons this changes are orderings against those strings.
 */

/** Escapes in the order they appear: a surrogate pair, a NUL or lone surrogate, any other escape. */
const ESCAPES =
  /\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u(0000|d[89a-f][0-9a-f]{2})|\\u[0-9a-f]{4}|\\[^u]/gi;

/**
 * The payload's JSON text with `\u0000` and unpaired surrogate escapes replaced by `\ufffd`, or
 * null when the payload is fine as it is (the usual case: a payload without `\u` is checked by one
 * byte search). Linear in the text: one pass of a regular expression without nested repetition.
 */
export function filterableText(payload: Buffer | string): string | null {
  if (!payload.includes('\\u')) return null;
  const text = typeof payload === 'string' ? payload : payload.toString('utf8');
  let changed = false;
  const safe = text.replace(ESCAPES, (sequence, _high, _low, bad) => {
    if (bad === undefined) return sequence;
    changed = true;
    return '\\ufffd';
  });
  return changed ? safe : null;
}
