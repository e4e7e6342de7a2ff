/**
 * Honouring `Retry-After` on 429 and 503, as a wrapper around fetch (openapi-fetch hands every
 * request to it as one Request object, so a retry is the same request sent again).
 *
 * Which requests are retried: hookpost answers 429 (a key's rate limit) before it reads or
 * writes anything, so any request may go again. A 503 is different: `database_unavailable` can
 * follow a COMMIT whose answer was lost, so a POST or PATCH is sent again only when it carries
 * an `Idempotency-Key` (hookpost then answers the retry with the first request's ids); GET, PUT,
 * DELETE and HEAD are safe to repeat.
 */

import { retryAfterSeconds } from './errors.js';

/** How the client honours Retry-After; `false` turns it off. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /**
   * The longest wait the client takes on its own, in seconds. A longer `Retry-After` is handed
   * back to the caller at once (as a HookpostError with `retryAfterSeconds`). Default 10.
   */
  maxDelaySeconds?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { maxRetries: 2, maxDelaySeconds: 10 };

export type FetchFunction = (request: Request) => Promise<Response>;

const REPEATABLE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

function mayRetry(request: Request, status: number): boolean {
  if (status === 429) return true;
  if (status !== 503) return false;
  return REPEATABLE_METHODS.has(request.method) || request.headers.has('idempotency-key');
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `fetchFn` with Retry-After honoured within `options`. Without a Retry-After header the answer
 * is returned as it is: the server did not say when to come back.
 */
export function retryingFetch(fetchFn: FetchFunction, options: RetryOptions | false): FetchFunction {
  if (options === false) return fetchFn;
  const maxRetries = options.maxRetries ?? DEFAULT_RETRY.maxRetries;
  const maxDelayMs = (options.maxDelaySeconds ?? DEFAULT_RETRY.maxDelaySeconds) * 1000;
  return async (request) => {
    for (let retry = 0; ; retry++) {
      // A Request's body can be read once: keep the original for the next try.
      const last = retry >= maxRetries;
      const response = await fetchFn(last ? request : request.clone());
      if (last || !mayRetry(request, response.status)) return response;
      const seconds = retryAfterSeconds(response.headers.get('retry-after'), Date.now());
      if (seconds === undefined || seconds * 1000 > maxDelayMs) return response;
      // Free the connection before waiting; the body of a refused request is not needed.
      await response.body?.cancel().catch(() => {});
      await sleep(seconds * 1000, request.signal);
    }
  };
}
