/** Endpoint health routes: one endpoint's breaker and latency, and the list of slow endpoints. */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { readEndpointHealth } from '../endpoints/health-read.js';
import { latencyWindow, MIN_PERCENTILE_SAMPLES as MIN_SAMPLES } from '../endpoints/latency.js';
import type { EndpointStore } from '../endpoints/store.js';
import { type ApiEnv, callerOf } from './auth.js';
import { HttpError, notFound } from './errors.js';

/** GET /v1/endpoints/slow and /v1/endpoints/{id}/health, mounted by app.ts before the endpoint routes. */
export function healthRoutes(deps: { sql: Sql; endpoints: EndpointStore }) {
  const app = new Hono<ApiEnv>();

  app.get('/slow', async (c) => {
    const raw = c.req.query('p95_ms') ?? '2000';
    const threshold = Number(raw);
    if (!Number.isFinite(threshold) || threshold < 0) {
      throw new HttpError(400, 'validation_failed', 'p95_ms: must be a number >= 0');
    }
    const summaries = await latencyWindow(deps.sql);
    const slow = [...summaries]
      .filter(([, s]) => s.sampleCount >= MIN_SAMPLES && (s.p95Ms ?? 0) > threshold)
      .sort(([, a], [, b]) => (b.p95Ms ?? 0) - (a.p95Ms ?? 0));
    // The scoped lookup drops other tenants' endpoints from the list.
    const endpoints = new Map(
      (
        await deps.endpoints.getMany(
          callerOf(c),
          slow.map(([id]) => id),
        )
      ).map((e) => [e.id, e]),
    );
    return c.json({
      p95_ms: threshold,
      min_samples: MIN_SAMPLES,
      data: slow
        .filter(([id]) => endpoints.has(id))
        .map(([id, s]) => ({
          endpoint_id: id,
          url: endpoints.get(id)!.url,
          p50_ms: s.p50Ms,
          p95_ms: s.p95Ms,
          p99_ms: s.p99Ms,
          sample_count: s.sampleCount,
        })),
    });
  });

  app.get('/:id/health', async (c) => {
    const id = c.req.param('id');
    const endpoint = await deps.endpoints.get(callerOf(c), id);
    if (!endpoint) notFound('endpoint', id);
    const health = await readEndpointHealth(deps.sql, id);
    const latency = (await latencyWindow(deps.sql, [id])).get(id);
    return c.json({
      endpoint_id: id,
      state: health?.state ?? 'closed',
      consecutive_failures: health?.consecutive_failures ?? 0,
      opened_at: health?.opened_at ?? null,
      cooldown_seconds: health?.cooldown_seconds ?? null,
      p50_ms: latency?.p50Ms ?? null,
      p95_ms: latency?.p95Ms ?? null,
      p99_ms: latency?.p99Ms ?? null,
      sample_count: latency?.sampleCount ?? 0,
      last_success_at: health?.last_success_at ?? null,
      last_failure_at: health?.last_failure_at ?? null,
      failing_since: health?.failing_since ?? null,
      enabled: endpoint.enabled,
      disabled_reason: endpoint.disabledReason,
    });
  });

  return app;
}
