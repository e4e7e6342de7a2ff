/**
 * SERVER spans for the API requests that start work hookpost traces: enqueue, replay, resend
 * (docs/tracing.md). Mounted only when tracing is on, so a process without it runs no code here.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { RequestSpan, Tracing } from '../tracing/tracing.js';
import { HttpError } from './errors.js';

/** The span of a request in progress, by its Request object (dropped with it). */
const spans = new WeakMap<Request, RequestSpan>();

/**
 * A middleware that makes each POST matching it a SERVER span named `POST <route>`, continuing
 * the caller's W3C `traceparent` header when it sent a valid one (else a new trace).
 */
export function traceRequests(tracing: Tracing, route: string): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'POST') return next();
    const span = tracing.requestSpan(`POST ${route}`, c.req.header('traceparent'), {
      'http.request.method': 'POST',
      'http.route': route,
    });
    spans.set(c.req.raw, span);
    try {
      await next();
      span.end(c.res.status);
    } catch (error) {
      span.end(error instanceof HttpError ? error.status : 500);
      throw error;
    }
  };
}

/** The request's span, when tracing is on. */
export function requestSpan(c: Context): RequestSpan | undefined {
  return spans.get(c.req.raw);
}
