/**
 * GET /metrics in Prometheus text format: on the API's app, and on a listener of its own for
 * processes without an API (lives in api/, beside the error format it answers with, so
 * metrics/ never imports the HTTP layer) (`hookpost dispatcher` with HOOKPOST_METRICS_PORT). No bearer token
 * unless HOOKPOST_METRICS_TOKEN is set, as Prometheus scrapers expect.
 */
import { Hono } from 'hono';
import type { Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { fixedTokenAuth } from './auth.js';
import { createErrorHandler, notFoundHandler } from './errors.js';

/** Adds GET /metrics to `app`. */
export function mountMetrics(app: Hono, metrics: HookpostMetrics, token: string | undefined): void {
  if (token !== undefined) app.use('/metrics', fixedTokenAuth(token));
  app.get('/metrics', async (c) => {
    const text = await metrics.registry.metrics();
    return c.body(text, 200, { 'content-type': metrics.registry.contentType });
  });
}

/** An app that serves only /metrics (and the contract's error format for anything else). */
export function createMetricsApp(metrics: HookpostMetrics, token: string | undefined, log: Logger): Hono {
  const app = new Hono();
  app.onError(createErrorHandler(log));
  app.notFound(notFoundHandler);
  mountMetrics(app, metrics, token);
  return app;
}
