/** Endpoint health routes: one endpoint's breaker and latency, and the list of slow endpoints. */
import type { Hono } from 'hono';
import { latencyWindow, MIN_PERCENTILE_SAMPLES as MIN_SAMPLES } from '../endpoints/latency.js';
import { type EndpointRoutesDeps, notFound } from './endpoints.js';
import { HttpError } from './errors.js';

export function healthRoutes(app: Hono, deps: EndpointRoutesDeps): void {
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
    const endpoints = new Map((await deps.endpoints.getMany(slow.map(([id]) => id))).map((e) => [e.id, e]));
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
    const endpoint = await deps.endpoints.get(id);
    if (!endpoint) notFound(id);
    const [health] = await deps.sql<
      {
        state: string;
        consecutive_failures: number;
        opened_at: Date | null;
        cooldown_seconds: number | null;
        last_success_at: Date | null;
        last_failure_at: Date | null;
        failing_since: Date | null;
      }[]
    >`SELECT state, consecutive_failures, opened_at, cooldown_seconds, last_success_at, last_failure_at, failing_since
      FROM endpoint_health WHERE endpoint_id = ${id}`;
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
}
