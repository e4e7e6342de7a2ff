/**
 * A URL as it may be shown (in a report, a span, a log line): origin and path only. Its query
 * string, fragment and user info are dropped, since they can carry credentials (`?token=…`,
 * `https://user:pass@…`). Undefined when `raw` is not a URL.
 */
export function shownUrl(raw: string): string | undefined {
  try {
    const url = new URL(raw);
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
}
