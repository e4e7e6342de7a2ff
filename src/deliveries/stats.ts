/**
 * The pipeline at a glance, for GET /v1/pipeline and the database-derived metrics. Every query
 * here is sized by the backlog, the endpoint count or the last hour, never by the whole history:
 * why each is cheap is noted on it, and docs/architecture.md ("Operations views") has the rest.
 */
import type { Sql } from '../db/connect.js';
import { MIN_PERCENTILE_SAMPLES } from '../endpoints/latency.js';
import { ALL_TENANTS, isUnrestricted, type TenantScope, tenantIs } from '../tenants/scope.js';

export type CircuitState = 'closed' | 'half_open' | 'open';

export interface EndpointGauge {
  endpointId: string;
  state: CircuitState;
  /** Null until the 24 h window holds MIN_PERCENTILE_SAMPLES attempts. */
  p95Ms: number | null;
}

export interface QueueSnapshot {
  /** Queued, never attempted yet. */
  pending: number;
  /** Queued after at least one attempt (status `failed`), including leases that ran out. */
  awaitingRetry: number;
  /** Claimed by a dispatcher whose lease still holds. */
  inFlight: number;
  /** Age of the oldest delivery still queued for an enabled endpoint; 0 when none is. */
  oldestPendingAgeSeconds: number;
  /** Live (enabled, not deleted) endpoints that have a health row. */
  endpoints: EndpointGauge[];
}

interface SnapshotRow {
  pending: number;
  awaiting_retry: number;
  in_flight: number;
  oldest_age_seconds: number | null;
  endpoints: { id: string; state: CircuitState; p95_ms: number | null }[];
}

/**
 * One statement for the whole snapshot.
 * - Queue counts scan delivery_queue, which holds only unsettled deliveries (the backlog). The
 *   status comes from the queue row alone, no join to deliveries: its attempt_count is 0 until
 *   the first attempt that counts (a claim handed back and an uncharged attempt give it back, a
 *   replay resets it: src/queue/); a valid lease is `in_flight`.
 * - The oldest delivery is the lowest queued id (ids are time-ordered): a walk of the primary
 *   key that stops at the first row, skipping only rows parked for disabled endpoints (they wait
 *   by design, and would keep the age alert firing until the endpoint is deleted).
 * - Endpoint rows: one per live endpoint, the p95 already summarised by the dispatchers'
 *   percentile refresh (src/endpoints/latency.ts).
 */
export async function readQueueSnapshot(sql: Sql, scope: TenantScope = ALL_TENANTS): Promise<QueueSnapshot> {
  // A tenant's share: its endpoints' queue rows (the metrics read everything, unscoped).
  const inScope = isUnrestricted(scope)
    ? sql`true`
    : sql`endpoint_id IN (SELECT e.id FROM endpoints e WHERE ${tenantIs(sql, scope, 'e.tenant_id')})`;
  const [row] = await sql<SnapshotRow[]>`
    WITH queue AS (
      SELECT
        count(*) FILTER (WHERE NOT leased AND attempt_count = 0)::int AS pending,
        count(*) FILTER (WHERE NOT leased AND attempt_count > 0)::int AS awaiting_retry,
        count(*) FILTER (WHERE leased)::int AS in_flight
      FROM (SELECT coalesce(lease_expires_at >= now(), false) AS leased, attempt_count FROM delivery_queue
            WHERE ${inScope}) q
    ),
    oldest AS (
      SELECT extract(epoch FROM now() - d.created_at)::float8 AS age FROM deliveries d
      WHERE d.id = (SELECT q.delivery_id FROM delivery_queue q
                    WHERE q.endpoint_id NOT IN (SELECT id FROM endpoints WHERE NOT enabled) AND ${inScope}
                    ORDER BY q.delivery_id LIMIT 1)
    ),
    live AS (
      SELECT coalesce(json_agg(json_build_object(
          'id', h.endpoint_id, 'state', h.state,
          'p95_ms', CASE WHEN h.sample_count >= ${MIN_PERCENTILE_SAMPLES} THEN h.p95_ms END)
        ORDER BY h.endpoint_id), '[]') AS endpoints
      FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id
      WHERE e.enabled AND e.deleted_at IS NULL AND ${tenantIs(sql, scope, 'e.tenant_id')}
    )
    SELECT queue.*, (SELECT age FROM oldest) AS oldest_age_seconds, live.endpoints FROM queue, live`;
  return {
    pending: row!.pending,
    awaitingRetry: row!.awaiting_retry,
    inFlight: row!.in_flight,
    oldestPendingAgeSeconds: Math.max(0, row!.oldest_age_seconds ?? 0),
    endpoints: row!.endpoints.map((e) => ({ endpointId: e.id, state: e.state, p95Ms: e.p95_ms })),
  };
}

export interface RecentActivity {
  /** Dead letters kept now (replay clears dead_at, so it counts only current ones). */
  deadLetter: number;
  /** Successful attempts that started in the last hour. */
  deliveredLastHour: number;
  /** Failed attempts (retryable or permanent) that started in the last hour. */
  failedLastHour: number;
  /** Mean duration of the last hour's successful attempts; null when there were none. */
  avgDeliveryMsLastHour: number | null;
}

/**
 * The last hour reads delivery_attempts through its BRIN index on started_at
 * (sql/0003_attempts_started_at_brin.sql): only the last hour's pages, whatever the history.
 * Dead letters are an index-only count of the partial index on dead_at.
 */
export async function readRecentActivity(
  sql: Sql,
  scope: TenantScope = ALL_TENANTS,
): Promise<RecentActivity> {
  const inScope = isUnrestricted(scope)
    ? sql`true`
    : sql`endpoint_id IN (SELECT e.id FROM endpoints e WHERE ${tenantIs(sql, scope, 'e.tenant_id')})`;
  const [row] = await sql<
    { dead_letter: number; delivered: number; failed: number; avg_ms: number | null }[]
  >`
    SELECT
      (SELECT count(*)::int FROM deliveries WHERE dead_at IS NOT NULL AND ${inScope}) AS dead_letter,
      count(*) FILTER (WHERE outcome = 'success')::int AS delivered,
      count(*) FILTER (WHERE outcome <> 'success')::int AS failed,
      avg(duration_ms) FILTER (WHERE outcome = 'success')::float8 AS avg_ms
    FROM delivery_attempts WHERE started_at >= now() - interval '1 hour' AND ${inScope}`;
  return {
    deadLetter: row!.dead_letter,
    deliveredLastHour: row!.delivered,
    failedLastHour: row!.failed,
    avgDeliveryMsLastHour: row!.avg_ms === null ? null : Math.round(row!.avg_ms * 10) / 10,
  };
}
