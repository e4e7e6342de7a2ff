/**
 * The process logger. Log lines carry ids, counts, status codes and error classes only: never a
 * payload, a secret, a token or a full URL (a URL can hold credentials in its query).
 */
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'hookpost' } });
}

/**
 * The fields an error contributes to a log line: its class, its code (a SQLSTATE or a Node or
 * postgres.js code) and its message. Never the error object itself: postgres.js errors carry the
 * query's parameters, and a PostgreSQL `detail` can quote a row.
 */
export function errorFields(error: unknown): { errorName: string; message: string; code?: string } {
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null;
  const fields: { errorName: string; message: string; code?: string } = {
    errorName: typeof e?.name === 'string' ? e.name : typeof error,
    message: typeof e?.message === 'string' ? e.message : String(error),
  };
  if (typeof e?.code === 'string') fields.code = e.code;
  return fields;
}
