/**
 * Fan-outs that reached no endpoint: an event whose type no endpoint of its tenant subscribes to
 * is accepted (202), stored and delivered nowhere. The enqueue answer says so (`unrouted`), the
 * counter hookpost_messages_unrouted_total counts them per process, and unrouted_counts keeps a
 * day of them for GET /v1/pipeline, whatever process accepted them.
 *
 * The rows are written after the enqueue committed, in one statement per request and only for
 * requests that had such events: the enqueue statement (the hot path) is unchanged, and a request
 * whose events all reach an endpoint costs nothing more. A failed write loses a statistic, never
 * an event, so it is logged and the request still answers 202.
 */
import type { Sql } from '../db/connect.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';

export interface UnroutedEvent {
  tenantId: string;
  eventType: string;
}

/** How long rows are kept; only the last hour is read today. */
const KEEP_HOURS = 25;

/** Records `events` (one per message) as one row per (tenant, event type), pruning old rows. */
export async function recordUnrouted(sql: Sql, events: UnroutedEvent[]): Promise<void> {
  if (events.length === 0) return;
  const groups = new Map<string, { tenantId: string; eventType: string; messages: number }>();
  for (const e of events) {
    const key = JSON.stringify([e.tenantId, e.eventType]);
    const group = groups.get(key) ?? { ...e, messages: 0 };
    group.messages += 1;
    groups.set(key, group);
  }
  const rows = [...groups.values()];
  // The prune is an index range scan of old rows: none most of the time.
  await sql`
    WITH pruned AS (DELETE FROM unrouted_counts WHERE at < now() - make_interval(hours => ${KEEP_HOURS}))
    INSERT INTO unrouted_counts (tenant_id, event_type, messages)
    SELECT * FROM unnest(${rows.map((r) => r.tenantId)}::text[], ${rows.map((r) => r.eventType)}::text[],
                         ${rows.map((r) => r.messages)}::int[])`;
}

/** Unrouted messages accepted in the last hour, within `scope`. */
export async function readUnroutedLastHour(sql: Sql, scope: TenantScope): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    SELECT coalesce(sum(messages), 0)::int AS n FROM unrouted_counts
    WHERE at >= now() - interval '1 hour' AND ${tenantIs(sql, scope, 'tenant_id')}`;
  return row?.n ?? 0;
}
