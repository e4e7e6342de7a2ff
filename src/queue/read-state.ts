/**
 * A queue row's state as readers see it, derived in one place (states.ts owns the rule): whether
 * its delivery is in flight, when it is next attempted, and why it waits with no next attempt
 * time. The API's delivery reads and the resend's status filter compose these fragments.
 */
import type { Executor, Fragment } from '../db/connect.js';

/** Why a queued delivery waits with no next attempt time; null when it is not parked. */
export type WaitReason = 'behind_ordering_key' | 'circuit_open' | 'endpoint_disabled';

/**
 * The joins for a query over `deliveries d`: its queue row `q` (none once settled), and for a
 * queued one its endpoint `qe` and circuit `qh`, which say why a parked row waits.
 */
export function queueRowJoins(sql: Executor): Fragment {
  return sql`LEFT JOIN delivery_queue q ON q.delivery_id = d.id
    LEFT JOIN endpoints qe ON qe.id = d.endpoint_id AND q.delivery_id IS NOT NULL
    LEFT JOIN endpoint_health qh ON qh.endpoint_id = d.endpoint_id AND q.delivery_id IS NOT NULL`;
}

/**
 * The delivery's status as the API shows it (needs queueRowJoins' `q`): `in_flight` is derived,
 * the queue row holds a lease; otherwise the delivery row's own status.
 */
export function shownStatus(sql: Executor): Fragment {
  return sql`CASE WHEN q.lease_expires_at IS NOT NULL THEN 'in_flight' ELSE d.status END`;
}

/**
 * Columns (needs queueRowJoins): `attempt_count` (the queue row's while queued: it counts the
 * attempt in flight), `next_attempt_at` (only while scheduled: null once settled, in flight,
 * parked or held),
 * `parked` (a WaitReason or null: held behind its key's head, its endpoint disabled, its circuit
 * not closed) and, for `circuit_open`, `next_probe_at` (when the circuit releases its next probe;
 * it may be out already).
 */
export function queueColumns(sql: Executor): Fragment {
  return sql`coalesce(q.attempt_count, d.attempt_count) AS attempt_count,
    CASE WHEN q.state = 'scheduled' THEN q.next_attempt_at END AS next_attempt_at,
    CASE WHEN q.state = 'held' THEN 'behind_ordering_key'
      WHEN q.state = 'parked' AND NOT qe.enabled THEN 'endpoint_disabled'
      WHEN q.state = 'parked' AND qh.state <> 'closed' THEN 'circuit_open' END AS parked,
    CASE WHEN q.state = 'parked' AND qe.enabled AND qh.state <> 'closed'
      THEN qh.opened_at + make_interval(secs => qh.cooldown_seconds) END AS next_probe_at`;
}

/**
 * A column (needs queueRowJoins) for one delivery's read, not for lists: for a row held behind its
 * ordering key, the delivery at the head of that key (its one row that is not held; null in the
 * moment between a head settling and the next being released). One probe of
 * delivery_queue_key_head_idx.
 */
export function orderingHeadColumn(sql: Executor): Fragment {
  return sql`CASE WHEN q.state = 'held' THEN (
      SELECT k.delivery_id FROM delivery_queue k
      WHERE k.endpoint_id = q.endpoint_id AND k.ordering_key = q.ordering_key AND k.state <> 'held'
      LIMIT 1) END AS ordering_head_id`;
}

/** At most this many parked rows are counted for an endpoint (the health read stays cheap). */
export const PARKED_COUNT_CAP = 10_000;

/**
 * How many of the endpoint's queued deliveries are parked (they wait for its circuit to close or
 * for it to be enabled), counted up to PARKED_COUNT_CAP over delivery_queue_parked_idx.
 */
export async function countParked(sql: Executor, endpointId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM delivery_queue WHERE endpoint_id = ${endpointId} AND state = 'parked'
      LIMIT ${PARKED_COUNT_CAP}) p`;
  return row?.n ?? 0;
}
