/**
 * Transition arm probe: a circuit going half-open lets exactly one of its endpoint's rows through.
 * The breaker (src/endpoints/breaker.ts) decides which circuits get a probe; this picks and arms
 * the row, in the breaker's statement.
 */
import type { Executor, Fragment } from '../db/connect.js';

/**
 * CTEs (to splice into a `WITH` list after `endpoints`, a CTE of `endpoint_id`): `probe
 * (endpoint_id, delivery_id)` names each endpoint's row that was due first, a scheduled one
 * before a parked one (NULL when it has neither), and that row is scheduled now. Only it is claimable while the circuit is
 * half-open (the claim compares `endpoint_health.probe_delivery_id`, which the caller records from
 * `probe`). A held row is never a probe: it waits for its key's head, not for the circuit.
 */
export function armProbes(sql: Executor, endpoints: Fragment): Fragment {
  return sql`
    probe AS (
      SELECT d.endpoint_id,
        coalesce(
          (SELECT q.delivery_id FROM delivery_queue q WHERE q.endpoint_id = d.endpoint_id AND q.state = 'scheduled'
           ORDER BY q.next_attempt_at LIMIT 1),
          (SELECT q.delivery_id FROM delivery_queue q WHERE q.endpoint_id = d.endpoint_id AND q.state = 'parked'
           ORDER BY q.next_attempt_at LIMIT 1)) AS delivery_id
      FROM ${endpoints} d
    ),
    armed AS (
      UPDATE delivery_queue q SET state = 'scheduled', next_attempt_at = now()
      FROM probe p WHERE q.delivery_id = p.delivery_id
    )`;
}
