/** The contract's error format: {"error": {"code", "message", "details"?}} with the right status. */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isDatabaseUnavailable, isStatementTimeout } from '../db/connect.js';
import type { DatabaseOutages } from '../db/outage.js';
import { errorFields, type Logger } from '../log.js';

/** Seconds a client is told to wait when the database is unreachable (Retry-After). */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/**
 * PostgreSQL refuses U+0000 in text (22021) and in jsonb (22P05). Only a caller's text can carry
 * one (payloads are bytea; response snippets are stripped), and the statement fails as a whole,
 * so nothing is half written: it is the caller's 400, wherever in the API the text went in.
 */
const NUL_IN_TEXT = new Set(['22021', '22P05']);

/** The caller-facing form of a thrown error: an HttpError, or undefined for our own failures. */
export function callerError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  // The database is down, restarting or out of connections. Send the request again shortly,
  // with the same Idempotency-Key: a connection cut during COMMIT may have stored it after all.
  if (isDatabaseUnavailable(error)) {
    return new HttpError(
      503,
      'database_unavailable',
      'the database is unavailable; try again shortly',
      undefined,
      { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
    );
  }
  // A statement ran past the API's statement_timeout and was cancelled: the database is busy, or
  // the request asks for more than one statement may take. The cancelled statement, and a
  // transaction around it, rolled back: an enqueue sent again with its Idempotency-Key is safe.
  if (isStatementTimeout(error)) {
    return new HttpError(
      503,
      'database_busy',
      'the request took longer than the database allows one query; try again shortly, or narrow the filter',
      undefined,
      { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
    );
  }
  const sqlState = (error as { code?: unknown } | null)?.code;
  if (
    (error as Error | null)?.name === 'PostgresError' &&
    typeof sqlState === 'string' &&
    NUL_IN_TEXT.has(sqlState)
  ) {
    return new HttpError(
      400,
      'invalid_text',
      'text fields, ids and query parameters cannot contain the NUL character (\\u0000)',
    );
  }
  return undefined;
}

/**
 * Hono onError: caller errors as their 4xx; anything else is a 500 that reveals nothing about the
 * inside. A 503 for an unavailable database goes to `outages`, which logs once per outage.
 */
export function createErrorHandler(log: Logger, outages?: Pick<DatabaseOutages, 'failed'>) {
  return (error: Error, c: Context) => {
    const forCaller = callerError(error);
    if (forCaller) {
      if (forCaller.code === 'database_unavailable')
        outages?.failed(error, `${c.req.method} ${c.req.routePath}`);
      // Which route ran out of time, for the operator (never the query or its parameters).
      if (forCaller.code === 'database_busy')
        log.warn({ route: c.req.routePath, method: c.req.method }, 'statement timeout: answered 503');
      for (const [name, value] of Object.entries(forCaller.headers ?? {})) c.header(name, value);
      return c.json(errorBody(forCaller.code, forCaller.message, forCaller.details), forCaller.status);
    }
    // Class, SQLSTATE and message only: never the error object, whose fields (a query's
    // parameters, a PostgreSQL `detail`) can quote payloads or secrets.
    log.error({ route: c.req.routePath, method: c.req.method, ...errorFields(error) }, 'unhandled error');
    return c.json(errorBody('internal_error', 'internal error'), 500);
  };
}

export function notFoundHandler(c: Context) {
  return c.json(errorBody('not_found', `no route for ${c.req.method} ${c.req.path}`), 404);
}

/**
 * 404 for an id the caller cannot see: unknown, deleted, or another tenant's. The three are
 * indistinguishable on purpose (a tenant-bound key must not learn that another tenant's id exists).
 */
export function notFound(
  kind: 'endpoint' | 'delivery' | 'replay' | 'tenant' | 'api_key' | 'event_type' | 'message',
  id: string,
): never {
  const noun = kind.replace('_', ' ');
  throw new HttpError(404, `${kind}_not_found`, `${noun} ${id} not found`);
}

/**
 * 429 for a bulk replay or resend beyond the tenant's runs at once (HOOKPOST_MAX_REPLAYS_PER_TENANT):
 * a run advances at least every few seconds, so a retry after half a minute usually finds a place.
 */
export function tooManyRuns(error: Error): never {
  throw new HttpError(429, 'too_many_replays', error.message, undefined, { 'retry-after': '30' });
}
