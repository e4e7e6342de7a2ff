import { HttpError } from './errors.js';

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

/** Parses `?limit=`: 1..500, default 50; anything else is a 400 naming the parameter. */
export function pageLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_PAGE;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE) {
    throw new HttpError(400, 'validation_failed', `limit: must be an integer from 1 to ${MAX_PAGE}`, [
      { field: 'limit', message: `must be an integer from 1 to ${MAX_PAGE}` },
    ]);
  }
  return value;
}

/**
 * Parses `?cursor=`: the `next_cursor` of the previous page, which is the last id it showed.
 * Anything else is a 400 rather than a silent first (or empty) page: a client that mangled its
 * cursor would otherwise loop over page one forever or think the list ended.
 */
export function pageCursor(raw: string | undefined, idPrefix: string): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  // A NUL is answered as everywhere else (errors.ts: invalid_text), not as a bad cursor.
  if (raw.includes('\u0000')) {
    throw new HttpError(
      400,
      'invalid_text',
      'text fields, ids and query parameters cannot contain the NUL character (\\u0000)',
    );
  }
  if (!raw.startsWith(idPrefix) || !/^[0-9a-f]{32}$/.test(raw.slice(idPrefix.length))) {
    throw new HttpError(400, 'invalid_cursor', "cursor: not a next_cursor from this list's previous page", [
      { field: 'cursor', message: 'must be the next_cursor of the previous page' },
    ]);
  }
  return raw;
}
