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
