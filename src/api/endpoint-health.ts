/** Endpoint health routes: one endpoint's breaker and latency, and the list of slow endpoints. */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { type EndpointHealthRow, readEndpointHealth } from '../endpoints/health-read.js';
import { latencyWindow, MIN_PERCENTILE_SAMPLES as MIN_SAMPLES } from '../endpoints/latency.js';
import { AllEndpointsLatencyWindow, latencyWindowFor } from '../endpoints/slow-endpoints.js';
import type { EndpointStore } from '../endpoints/store.js';
import { isExpiring } from '../endpoints/tls-material.js';
import { countParked } from '../queue/read-state.js';
import { type ApiEnv, callerOf } from './auth.js';
import { HttpError, notFound } from './errors.js';

/**
 * When a circuit that is not closed releases (or released) its next probe: opened_at plus the
 * cooldown, as the breaker tick computes it. Null while closed, and for a disabled endpoint (the
 * tick probes enabled ones only; a delivery's next_probe_at says the same, queue/read-state.ts).
 */
function nextProbeAt(health: EndpointHealthRow | undefined, enabled: boolean): Date | null {
  if (
    !enabled ||
    !health ||
    health.state === 'closed' ||
    !health.opened_at ||
    health.cooldown_seconds === null
  )
    return null;
  return new Date(health.opened_at.getTime() + health.cooldown_seconds * 1000);
}

/** GET /v1/endpoints/slow and /v1/endpoints/{id}/health, mounted by app.ts before the endpoint routes. */
export function healthRoutes(deps: { sql: Sql; endpoints: EndpointStore }) {
  const app = new Hono<ApiEnv>();
  // Summed at most once per 30 s for every caller of this process that sees all tenants.
  const allEndpoints = new AllEndpointsLatencyWindow(deps.sql);

  app.get('/slow', async (c) => {
    const raw = c.req.query('p95_ms') ?? '2000';
    const threshold = Number(raw);
    if (!Number.isFinite(threshold) || threshold < 0) {
      throw new HttpError(400, 'validation_failed', 'p95_ms: must be a number >= 0');
    }
    // A tenant-bound key sums its own endpoints only; the all-tenant view comes from the cache.
    const summaries = await latencyWindowFor(deps.sql, allEndpoints, callerOf(c));
    const slow = [...summaries]
      .filter(([, s]) => s.sampleCount >= MIN_SAMPLES && (s.p95Ms ?? 0) > threshold)
      .sort(([, a], [, b]) => (b.p95Ms ?? 0) - (a.p95Ms ?? 0));
    // The scoped lookup drops deleted endpoints, and the reserved tenant's for non-admin keys.
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
    const [health, latency, parked] = await Promise.all([
      readEndpointHealth(deps.sql, id),
      latencyWindow(deps.sql, [id]).then((w) => w.get(id)),
      countParked(deps.sql, id),
    ]);
    const certificateEnd = endpoint.credentials.tls?.client_certificate?.not_after ?? null;
    return c.json({
      endpoint_id: id,
      state: health?.state ?? 'closed',
      consecutive_failures: health?.consecutive_failures ?? 0,
      opened_at: health?.opened_at ?? null,
      cooldown_seconds: health?.cooldown_seconds ?? null,
      next_probe_at: nextProbeAt(health, endpoint.enabled),
      parked_count: parked,
      p50_ms: latency?.p50Ms ?? null,
      p95_ms: latency?.p95Ms ?? null,
      p99_ms: latency?.p99Ms ?? null,
      sample_count: latency?.sampleCount ?? 0,
      last_success_at: health?.last_success_at ?? null,
      last_failure_at: health?.last_failure_at ?? null,
      failing_since: health?.failing_since ?? null,
      enabled: endpoint.enabled,
      disabled_reason: endpoint.disabledReason,
      client_certificate_expires_at: certificateEnd,
      certificate_expiring: certificateEnd !== null && isExpiring(new Date(certificateEnd), Date.now()),
    });
  });

  return app;
}
