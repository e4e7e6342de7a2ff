/** GET /v1/pipeline: the delivery pipeline at a glance (queue, last hour, open circuits). */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { readQueueSnapshot, readRecentActivity } from '../deliveries/stats.js';
import { readUnroutedLastHour } from '../metrics/unrouted.js';
import { NO_TENANT, narrowScope } from '../tenants/scope.js';
import { type ApiEnv, callerOf } from './auth.js';

/**
 * Always read fresh (unlike the cached metric gauges): an operator asking once wants the
 * numbers as of now, and both queries are sized by the backlog and the last hour.
 */
export function pipelineRoutes(sql: Sql) {
  const app = new Hono<ApiEnv>();
  app.get('/', async (c) => {
    // A tenant's pipeline (its key's, or ?tenant_id= for an unbound key); another tenant's
    // name reads as a tenant with nothing in it.
    const scope = narrowScope(callerOf(c), c.req.query('tenant_id')) ?? NO_TENANT;
    const [queue, recent, unrouted] = await Promise.all([
      readQueueSnapshot(sql, scope),
      readRecentActivity(sql, scope),
      readUnroutedLastHour(sql, scope),
    ]);
    return c.json({
      pending: queue.pending,
      awaiting_retry: queue.awaitingRetry,
      in_flight: queue.inFlight,
      dead_letter: recent.deadLetter,
      delivered_last_hour: recent.deliveredLastHour,
      failed_last_hour: recent.failedLastHour,
      oldest_pending_age_seconds: Math.round(queue.oldestPendingAgeSeconds * 1000) / 1000,
      avg_delivery_ms_last_hour: recent.avgDeliveryMsLastHour,
      open_circuits: queue.endpoints.filter((e) => e.state !== 'closed').length,
      unrouted_last_hour: unrouted,
    });
  });
  return app;
}
