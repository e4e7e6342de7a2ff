/** Reading deliveries for the API: one with its attempts, or a keyset-paginated list. */
import type { Sql } from '../db/connect.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';

export const DELIVERY_STATUSES = [
  'pending',
  'in_flight',
  'delivered',
  'failed',
  'dead_letter',
  'cancelled',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  id: string;
  tenant_id: string;
  message_id: string;
  endpoint_id: string;
  event_type: string;
  event_id: string | null;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error_class: string | null;
  last_error: string | null;
  last_duration_ms: number | null;
  created_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  dead_at: Date | null;
  /** The payload bytes and response snippets were erased (payload expiry or expunge); metadata stays. */
  payload_expired: boolean;
  /** The message's ordering key, and this delivery's number within (endpoint, key); null when unkeyed. */
  ordering_key: string | null;
  sequence: number | null;
  /**
   * Why a queued delivery waits with no next attempt time; null when it is not parked.
   * `behind_ordering_key`: an earlier delivery of its ordering key is not settled yet.
   */
  parked: 'behind_ordering_key' | 'circuit_open' | 'endpoint_disabled' | null;
  /** For `circuit_open`: when the circuit releases its next probe (it may be out already). */
  next_probe_at: Date | null;
}

export interface AttemptRow {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  outcome: string;
  error_class: string | null;
  error: string | null;
  response_snippet: string | null;
}

/**
 * `in_flight` is derived: the delivery's queue row holds a lease. next_attempt_at comes from the
 * queue row too (null once the delivery is settled; 'infinity' reads as null: parked, and
 * `parked` says why, from the endpoint and its circuit; see deliveries/queue-state.ts).
 */
const DELIVERY_COLUMNS = `d.id, m.tenant_id, d.message_id, d.endpoint_id, m.event_type, m.event_id,
  CASE WHEN q.lease_expires_at IS NOT NULL THEN 'in_flight' ELSE d.status END AS status,
  coalesce(q.attempt_count, d.attempt_count) AS attempt_count,
  CASE WHEN q.next_attempt_at < 'infinity' AND q.lease_expires_at IS NULL THEN q.next_attempt_at END AS next_attempt_at,
  d.last_status_code, d.last_error_class, d.last_error, d.last_duration_ms,
  d.created_at, d.updated_at, d.delivered_at, d.dead_at,
  m.payload_expired_at IS NOT NULL AS payload_expired,
  m.ordering_key, d.sequence::float8 AS sequence,
  CASE WHEN q.lease_expires_at IS NULL AND q.next_attempt_at = 'infinity' THEN
    CASE WHEN q.held THEN 'behind_ordering_key'
      WHEN NOT pe.enabled THEN 'endpoint_disabled' WHEN ph.state <> 'closed' THEN 'circuit_open' END
  END AS parked,
  CASE WHEN q.lease_expires_at IS NULL AND q.next_attempt_at = 'infinity' AND NOT q.held AND pe.enabled
    AND ph.state <> 'closed' THEN ph.opened_at + make_interval(secs => ph.cooldown_seconds) END AS next_probe_at`;

/** The joins DELIVERY_COLUMNS reads: the queue row, and the endpoint and circuit for `parked`. */
const DELIVERY_JOINS = `LEFT JOIN delivery_queue q ON q.delivery_id = d.id
  LEFT JOIN endpoints pe ON pe.id = d.endpoint_id AND q.delivery_id IS NOT NULL
  LEFT JOIN endpoint_health ph ON ph.endpoint_id = d.endpoint_id AND q.delivery_id IS NOT NULL`;

/**
 * The delivery, its payload bytes and every attempt in the order they started (a replay restarts
 * the numbering, so numbers alone would interleave rounds); undefined when unknown.
 */
export async function getDelivery(
  sql: Sql,
  scope: TenantScope,
  id: string,
): Promise<{ delivery: DeliveryRow; payload: Buffer; attempts: AttemptRow[] } | undefined> {
  // The message carries the tenant (the delivery's endpoint belongs to the same one).
  const [row] = await sql<(DeliveryRow & { payload: Buffer })[]>`
    SELECT ${sql.unsafe(DELIVERY_COLUMNS)}, m.payload
    FROM deliveries d JOIN messages m ON m.id = d.message_id
    ${sql.unsafe(DELIVERY_JOINS)}
    WHERE d.id = ${id} AND ${tenantIs(sql, scope, 'm.tenant_id')}`;
  if (!row) return undefined;
  const attempts = await sql<AttemptRow[]>`
    SELECT attempt, started_at, duration_ms, status_code, outcome, error_class, error, response_snippet
    FROM delivery_attempts WHERE delivery_id = ${id} ORDER BY started_at, attempt`;
  const { payload, ...delivery } = row;
  return { delivery, payload, attempts };
}

export interface ListFilter {
  status?: DeliveryStatus | undefined;
  endpointId?: string | undefined;
  eventType?: string | undefined;
  /** The deliveries of one message (its fan-out, the `webhook-id` a partner reports). */
  messageId?: string | undefined;
  /** ISO 8601 bounds on when the delivery was created. */
  since?: string | undefined;
  until?: string | undefined;
  limit: number;
  /** The last id of the previous page; pages go newest first. */
  cursor?: string | undefined;
}

function statusFilter(sql: Sql, status: DeliveryStatus | undefined) {
  if (!status) return sql``;
  if (status === 'in_flight') return sql`AND q.lease_expires_at IS NOT NULL`;
  if (status === 'pending' || status === 'failed') {
    return sql`AND d.status = ${status} AND q.lease_expires_at IS NULL`;
  }
  return sql`AND d.status = ${status}`;
}

/**
 * Newest first by id (ids are time-ordered), so the cursor is simply the last id seen. A tenant
 * scope filters on the message's tenant; with an endpoint filter as well, the endpoint index
 * (endpoint_id, id) drives the scan and the tenant check is a filter on the joined message.
 */
export async function listDeliveries(
  sql: Sql,
  scope: TenantScope,
  filter: ListFilter,
): Promise<DeliveryRow[]> {
  return sql<DeliveryRow[]>`
    SELECT ${sql.unsafe(DELIVERY_COLUMNS)}
    FROM deliveries d JOIN messages m ON m.id = d.message_id
    ${sql.unsafe(DELIVERY_JOINS)}
    WHERE ${tenantIs(sql, scope, 'm.tenant_id')}
      ${statusFilter(sql, filter.status)}
      ${filter.eventType ? sql`AND m.event_type = ${filter.eventType}` : sql``}
      ${filter.messageId ? sql`AND d.message_id = ${filter.messageId}` : sql``}
      ${filter.since ? sql`AND d.created_at >= ${filter.since}::text::timestamptz` : sql``}
      ${filter.until ? sql`AND d.created_at < ${filter.until}::text::timestamptz` : sql``}
      ${filter.endpointId ? sql`AND d.endpoint_id = ${filter.endpointId}` : sql``}
      ${filter.cursor ? sql`AND d.id < ${filter.cursor}` : sql``}
    ORDER BY d.id DESC
    LIMIT ${filter.limit}`;
}
