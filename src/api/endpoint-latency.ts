/** GET /v1/endpoints/{id}/latency: p50/p95/p99 per step over the last hours (the admin chart). */
import { Hono } from 'hono';
import { z } from 'zod';
import { latencySeries } from '../endpoints/latency-series.js';
import { type ApiEnv, callerOf } from './auth.js';
import { validate } from './body.js';
import type { EndpointRoutesDeps } from './endpoints.js';
import { notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';
import { latencySeriesSchema } from './openapi/responses.js';

/** Minute histograms are kept 25 h (refreshHealthPercentiles deletes older ones). */
const MAX_HOURS = 24;

export const latencyQuery = z.object({
  hours: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of hours')
    .transform(Number)
    .pipe(z.number().positive().max(MAX_HOURS))
    .optional()
    .meta({ description: `window, at most ${MAX_HOURS}; default 24` }),
  step_minutes: z
    .string()
    .regex(/^\d+$/, 'must be a whole number of minutes')
    .transform(Number)
    .pipe(z.number().int().min(1).max(1440))
    .optional()
    .meta({ description: 'width of one point; default: the window in about 96 points' }),
});

documentRoute({
  method: 'get',
  path: '/v1/endpoints/{id}/latency',
  operationId: 'getEndpointLatency',
  tag: 'endpoints',
  summary: 'Latency percentiles over time (steps with no attempt are left out)',
  params: z.object({ id: z.string().meta({ description: 'endpoint id (ep_…)' }) }),
  query: latencyQuery,
  responses: { 200: { description: 'the series, oldest first', schema: latencySeriesSchema } },
  errors: [404],
});

export function latencyRoutes(deps: Pick<EndpointRoutesDeps, 'sql' | 'endpoints'>) {
  const app = new Hono<ApiEnv>();
  app.get('/:id/latency', async (c) => {
    const id = c.req.param('id');
    const query = validate(latencyQuery, c.req.query());
    const hours = query.hours ?? 24;
    const stepMinutes = query.step_minutes ?? Math.max(1, Math.ceil((hours * 60) / 96));
    if (!(await deps.endpoints.get(callerOf(c), id))) notFound('endpoint', id);
    const points = await latencySeries(deps.sql, id, hours, stepMinutes);
    return c.json({
      endpoint_id: id,
      hours,
      step_minutes: stepMinutes,
      points: points.map((p) => ({
        at: p.at,
        p50_ms: p.p50Ms,
        p95_ms: p.p95Ms,
        p99_ms: p.p99Ms,
        sample_count: p.sampleCount,
      })),
    });
  });
  return app;
}
