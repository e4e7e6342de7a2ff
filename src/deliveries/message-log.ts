/**
 * The events log: a tenant's messages in id order, keyset-paginated, with their payload bytes as
 * accepted, so a partner's reconciliation job can pull what it may have missed
 * (GET /v1/messages). Ids are time-ordered (src/ids.ts), so the cursor is the last id shown and a
 * time range is an id range: with the (tenant_id, id) index, a page reads its own rows and stops,
 * whatever the size of the table or of the tenant's history before `since`.
 */
import type { Sql } from '../db/connect.js';
import { idAt } from '../ids.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';

/**
 * A page stops growing once the payloads in it pass this many bytes (it always holds at least
 * one message): 500 payloads of 256 KiB would otherwise make a 128 MB answer.
 */
export const MESSAGE_PAGE_BYTES = 4 * 1024 * 1024;

export interface MessageLogRow {
  id: string;
  tenant_id: string;
  event_type: string;
  event_id: string | null;
  ordering_key: string | null;
  created_at: Date;
  payload_expired: boolean;
  /** The bytes as accepted; empty once expired. */
  payload: Buffer;
}

export interface MessageLogFilter {
  eventType?: string | undefined;
  /** ISO 8601 bounds on the acceptance time carried by the id: since inclusive, until exclusive. */
  since?: string | undefined;
  until?: string | undefined;
  /** The last id of the previous page. */
  cursor?: string | undefined;
  order: 'asc' | 'desc';
  limit: number;
}

/**
 * The smallest message id accepted at or after `iso` (ids are `msg_` + 12 hex digits of Unix
 * milliseconds + random): every id >= it was accepted at or after that millisecond.
 */
export function messageIdAt(iso: string): string {
  return idAt('msg_', Date.parse(iso));
}

/**
 * One page of the log: up to `limit` messages, fewer when the payloads pass MESSAGE_PAGE_BYTES,
 * and whether more follow. The tenant condition comes from the caller's scope, so a cursor (an
 * id) taken from another tenant only positions the scan within this tenant's own messages. The
 * running byte total uses octet_length(), which reads the stored size without fetching
 * (de-TOASTing) the payload; only rows within the budget have their bytes read.
 */
export async function listMessages(
  sql: Sql,
  scope: TenantScope,
  filter: MessageLogFilter,
): Promise<{ rows: MessageLogRow[]; hasMore: boolean }> {
  const found = await messageLogQuery(sql, scope, filter);
  const rows = found.filter((r) => r.in_page).slice(0, filter.limit);
  return { rows, hasMore: found.length > rows.length };
}

/** The statement behind listMessages(), not yet run (the test EXPLAINs it). */
export function messageLogQuery(sql: Sql, scope: TenantScope, filter: MessageLogFilter) {
  const asc = filter.order === 'asc';
  const order = asc ? sql`ASC` : sql`DESC`;
  return sql<(MessageLogRow & { in_page: boolean })[]>`
    WITH candidates AS (
      SELECT id, sum(octet_length(payload)) OVER (ORDER BY id ${order}) - octet_length(payload) AS bytes_before
      FROM messages
      WHERE ${tenantIs(sql, scope, 'tenant_id')}
        ${filter.eventType === undefined ? sql`` : sql`AND event_type = ${filter.eventType}`}
        ${filter.since === undefined ? sql`` : sql`AND id >= ${messageIdAt(filter.since)}`}
        ${filter.until === undefined ? sql`` : sql`AND id < ${messageIdAt(filter.until)}`}
        ${filter.cursor === undefined ? sql`` : asc ? sql`AND id > ${filter.cursor}` : sql`AND id < ${filter.cursor}`}
      ORDER BY id ${order}
      -- One more than the page: whether anything follows.
      LIMIT ${filter.limit + 1}
    )
    SELECT m.id, m.tenant_id, m.event_type, m.event_id, m.ordering_key, m.created_at,
      m.payload_expired_at IS NOT NULL AS payload_expired, c.bytes_before < ${MESSAGE_PAGE_BYTES} AS in_page,
      CASE WHEN c.bytes_before < ${MESSAGE_PAGE_BYTES} THEN m.payload END AS payload
    FROM candidates c JOIN messages m ON m.id = c.id
    ORDER BY m.id ${order}`;
}
