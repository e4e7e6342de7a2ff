/**
 * Transition enqueue: new deliveries get their queue rows in the statement that creates them
 * (the enqueue, operational events), so a delivery is never committed without its row.
 */
import type { Executor, Fragment } from '../db/connect.js';
import { initialState } from './states.js';

/**
 * CTEs `<prefix>starts` and `<prefix>queued` (to splice into a `WITH` list after `rows`, a CTE of
 * `id, endpoint_id, message_id, ordering_key, sequence`) that insert one queue row per row: due
 * now, or parked when its endpoint cannot take it (initialState, looked up once per endpoint:
 * MATERIALIZED, since inlined the planner would evaluate the lookup per row again). A keyed row
 * starts held; the caller's unholdHeads (ordering.ts, a second statement) makes its key's head due.
 */
export function queueNewDeliveries(sql: Executor, prefix: string, rows: Fragment): Fragment {
  const starts = sql(`${prefix}starts`);
  return sql`
    ${starts} AS MATERIALIZED (
      SELECT u.endpoint_id, ${initialState(sql, sql`u.endpoint_id`)} AS state
      FROM (SELECT DISTINCT endpoint_id FROM ${rows}) u
    ),
    ${sql(`${prefix}queued`)} AS (
      INSERT INTO delivery_queue (delivery_id, endpoint_id, message_id, state, ordering_key, sequence)
      SELECT t.id, t.endpoint_id, t.message_id, CASE WHEN t.ordering_key IS NULL THEN s.state ELSE 'held' END,
        t.ordering_key, t.sequence
      FROM ${rows} t JOIN ${starts} s ON s.endpoint_id = t.endpoint_id
    )`;
}
