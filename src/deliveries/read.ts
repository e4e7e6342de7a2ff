/** Reading deliveries for the API: one with its attempts, or a keyset-paginated list. */
import type { Sql } from '../db/connect.js';
import { ID_TIME_SLACK_MS, idAt } from '../ids.js';
import {
  orderingHeadColumn,
  queueColumns,
  queueRowJoins,
  shownStatus,
  type WaitReason,
} from '../queue/read-state.js';
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
  parked: WaitReason | null;
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
 * The delivery's columns for a query over `deliveries d JOIN messages m` plus queueRowJoins: the
 * status, attempt count, next attempt and why it waits come from its queue row while it has one
 * (src/queue/read-state.ts derives them, once for every reader).
 */
function deliveryColumns(sql: Sql) {
  return sql`d.id, m.tenant_id, d.message_id, d.endpoint_id, m.event_type, m.event_id,
    ${shownStatus(sql)} AS status, ${queueColumns(sql)},
    d.last_status_code, d.last_error_class, d.last_error, d.last_duration_ms,
    d.created_at, d.updated_at, d.delivered_at, d.dead_at,
    m.payload_expired_at IS NOT NULL AS payload_expired,
    m.ordering_key, d.sequence::float8 AS sequence`;
}

/**
 * The delivery (with, when it waits behind its ordering key, the delivery at the key's head), its
 * payload bytes and every attempt in the order they started (a replay restarts
 * the numbering, so numbers alone would interleave rounds); undefined when unknown.
 */
export async function getDelivery(
  sql: Sql,
  scope: TenantScope,
  id: string,
): Promise<
  | { delivery: DeliveryRow & { ordering_head_id: string | null }; payload: Buffer; attempts: AttemptRow[] }
  | undefined
> {
  // The message carries the tenant (the delivery's endpoint belongs to the same one).
  const [row] = await sql<(DeliveryRow & { ordering_head_id: string | null; payload: Buffer })[]>`
    SELECT ${deliveryColumns(sql)}, ${orderingHeadColumn(sql)}, m.payload
    FROM deliveries d JOIN messages m ON m.id = d.message_id
    ${queueRowJoins(sql)}
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
 * `since`/`until` (on created_at, exact) also as id bounds with ID_TIME_SLACK_MS to spare, so
 * that a time range is an index range of messages_tenant_id_idx (tenant_id, id) and of the
 * deliveries' primary key: a range with nothing in it reads next to nothing, however long the
 * history outside it. Messages and their deliveries are inserted by one statement, so the two
 * created_at are the same value.
 */
function timeRange(sql: Sql, since: string | undefined, until: string | undefined) {
  const sinceMs = since === undefined ? Number.NaN : Date.parse(since);
  const untilMs = until === undefined ? Number.NaN : Date.parse(until);
  return sql`
    ${since === undefined ? sql`` : sql`AND d.created_at >= ${since}::text::timestamptz`}
    ${until === undefined ? sql`` : sql`AND d.created_at < ${until}::text::timestamptz`}
    ${
      Number.isNaN(sinceMs)
        ? sql``
        : sql`AND m.id >= ${idAt('msg_', sinceMs - ID_TIME_SLACK_MS)} AND d.id >= ${idAt('dlv_', sinceMs - ID_TIME_SLACK_MS)}`
    }
    ${
      Number.isNaN(untilMs)
        ? sql``
        : sql`AND m.id < ${idAt('msg_', untilMs + ID_TIME_SLACK_MS)} AND d.id < ${idAt('dlv_', untilMs + ID_TIME_SLACK_MS)}`
    }`;
}

/**
 * Newest first by id (ids are time-ordered), so the cursor is simply the last id seen. What keeps
 * a tenant's list within the tenant's own rows (docs/architecture.md, "Listing deliveries"):
 * - with no condition on the message (event type, time, message), a tenant's page is read per
 *   endpoint of the tenant (every endpoint has one tenant; deleted ones keep their history): the
 *   newest `limit` of each from the endpoint index (endpoint_id, id), then the newest `limit` of
 *   those. A walk of every delivery newest first, keeping the tenant's, read everybody's recent
 *   history first: 500 000 rows of a big tenant before a small one's first (2.6 s).
 * - otherwise the planner chooses between walking the deliveries newest first (by id, or the
 *   endpoint index) and reading the tenant's messages that match (messages_tenant_event_type_idx,
 *   messages_tenant_id_idx with the time range's id bounds: deliveries/message-indexes.ts), then
 *   their deliveries, sorted: a filter that matches nothing reads nothing.
 */
export async function listDeliveries(
  sql: Sql,
  scope: TenantScope,
  filter: ListFilter,
): Promise<DeliveryRow[]> {
  return deliveryListQuery(sql, scope, filter);
}

/** The statement behind listDeliveries(), not yet run (the test EXPLAINs it). */
export function deliveryListQuery(sql: Sql, scope: TenantScope, filter: ListFilter) {
  const onMessages =
    filter.eventType !== undefined ||
    filter.messageId !== undefined ||
    filter.since !== undefined ||
    filter.until !== undefined;
  if (scope.tenantId !== null && !onMessages) return tenantPageByEndpoint(sql, scope, filter);
  return sql<DeliveryRow[]>`
    SELECT ${deliveryColumns(sql)}
    FROM deliveries d JOIN messages m ON m.id = d.message_id
    ${queueRowJoins(sql)}
    WHERE ${tenantIs(sql, scope, 'm.tenant_id')}
      ${statusFilter(sql, filter.status)}
      ${filter.eventType ? sql`AND m.event_type = ${filter.eventType}` : sql``}
      ${filter.messageId ? sql`AND d.message_id = ${filter.messageId}` : sql``}
      ${timeRange(sql, filter.since, filter.until)}
      ${filter.endpointId ? sql`AND d.endpoint_id = ${filter.endpointId}` : sql``}
      ${filter.cursor ? sql`AND d.id < ${filter.cursor}` : sql``}
    ORDER BY d.id DESC
    LIMIT ${filter.limit}`;
}

/**
 * A tenant's page with no condition on the message: at most `limit` rows from each of the
 * tenant's endpoints (endpoints_tenant_all_idx, sql/0017), each an index range of
 * deliveries_endpoint_idx below the cursor. The message's tenant is checked again on the page.
 */
function tenantPageByEndpoint(sql: Sql, scope: TenantScope, filter: ListFilter) {
  return sql<DeliveryRow[]>`
    SELECT ${deliveryColumns(sql)}
    FROM (
      SELECT newest.id FROM endpoints e CROSS JOIN LATERAL (
        SELECT d.id FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id
        -- One endpoint, written as a range and ordered by (endpoint_id, id), the endpoint index's
        -- own order, which the primary key cannot give: with \`endpoint_id = e.id\` the planner
        -- took the primary key for an order by id alone (an endpoint's rows spread evenly over
        -- time, it assumes) and walked every tenant's newer rows to find an old endpoint's.
        WHERE d.endpoint_id >= e.id AND d.endpoint_id <= e.id
          ${statusFilter(sql, filter.status)}
          ${filter.cursor ? sql`AND d.id < ${filter.cursor}` : sql``}
        ORDER BY d.endpoint_id DESC, d.id DESC
        LIMIT ${filter.limit}
      ) newest
      WHERE ${tenantIs(sql, scope, 'e.tenant_id')}
        ${filter.endpointId ? sql`AND e.id = ${filter.endpointId}` : sql``}
      ORDER BY newest.id DESC
      LIMIT ${filter.limit}
    ) page
    JOIN deliveries d ON d.id = page.id JOIN messages m ON m.id = d.message_id
    ${queueRowJoins(sql)}
    WHERE ${tenantIs(sql, scope, 'm.tenant_id')}
    ORDER BY d.id DESC`;
}
