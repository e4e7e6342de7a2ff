/**
 * The one owner of a delivery_queue row's state. Only the files of src/queue/ write that table
 * (test/queue/writers.test.ts keeps it so); every statement that moves a queued row between
 * states composes the fragments below instead of writing the rule again. The states, in the
 * `state` column (sql/0014_queue_states.sql):
 *
 * - scheduled:  waiting for `next_attempt_at`; claimable once it has come, if its endpoint is
 *               enabled and its circuit closed, or if it is the probe of a half-open circuit
 *               (`endpoint_health.probe_delivery_id`, armed by probe.ts);
 * - leased:     claimed by a dispatcher, i.e. in flight (`lease_token`, `lease_expires_at` set);
 *               only its lease holder's result, the hand-back and the reaper move it on;
 * - cancelling: leased, but its delivery was cancelled meanwhile (its message expunged,
 *               expunge.ts): it leaves the queue when it comes back, whatever its result;
 * - parked:     its endpoint is disabled or its circuit is not closed. Still queued (nothing is
 *               lost), outside the claim's indexes, never claimed;
 * - held:       a keyed row behind its key's head: only ordering.ts unholds it. `park` and
 *               `unpark` never touch it: it waits for its key, not for its endpoint.
 *
 * The rule they all keep: a waiting row of a disabled endpoint or of a circuit that is not
 * closed (other than the probe) is parked; a waiting row of a deleted endpoint does not exist
 * (its delivery is `cancelled`). Why, and the transitions: docs/architecture.md ("Queue states").
 *
 * The transitions and where they live: enqueue (enqueue-rows.ts), claim (claim.ts), complete and
 * retry (complete.ts), hand back (hand-back.ts), reap (reap.ts), park / unpark / cancel waiting /
 * the sweep (here), hold / unhold (ordering.ts), arm probe (probe.ts), requeue for replay and
 * resend (requeue.ts), remove for expunge (expunge.ts). Endpoint lifecycle (disable, enable,
 * delete, close the circuit) composes them: src/endpoints/lifecycle.ts.
 */
import type { Executor, Fragment } from '../db/connect.js';

/** A queue row's state (the CHECK of sql/0014_queue_states.sql). */
export type QueueState = 'scheduled' | 'leased' | 'cancelling' | 'parked' | 'held';

/**
 * Opens a `WITH RECURSIVE` whose CTE `waiting(endpoint_id)` lists the endpoints that have
 * scheduled rows, by a loose index scan over delivery_queue_endpoint_due_idx: one descent per
 * endpoint, so its cost follows the backlog's endpoints, not its rows (parked and held rows are
 * not in that index, so an endpoint with only those costs nothing). Its last row is NULL (where
 * the recursion stops); readers filter it. The claim and the unclaimable sweep both start here.
 */
export function withWaitingEndpoints(sql: Executor): Fragment {
  return sql`
    WITH RECURSIVE waiting AS (
      (SELECT endpoint_id FROM delivery_queue WHERE state = 'scheduled' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT q.endpoint_id FROM delivery_queue q
              WHERE q.state = 'scheduled' AND q.endpoint_id > w.endpoint_id
              ORDER BY q.endpoint_id LIMIT 1)
      FROM waiting w WHERE w.endpoint_id IS NOT NULL
    )`;
}

/**
 * A CTE `parked_endpoints(endpoint_id)` for a `WITH RECURSIVE` list: the endpoints that have
 * parked rows, by the same loose index scan over delivery_queue_parked_idx (last row NULL).
 */
function parkedEndpoints(sql: Executor): Fragment {
  return sql`
    parked_endpoints AS (
      (SELECT endpoint_id FROM delivery_queue WHERE state = 'parked' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT q.endpoint_id FROM delivery_queue q
              WHERE q.state = 'parked' AND q.endpoint_id > w.endpoint_id
              ORDER BY q.endpoint_id LIMIT 1)
      FROM parked_endpoints w WHERE w.endpoint_id IS NOT NULL
    )`;
}

/**
 * A scalar SQL expression (pass qualified column references: it has tables of its own): the fate
 * of a row of endpoint `endpointId` (delivery `deliveryId`) that is about to wait again: 'cancel'
 * when the endpoint is deleted, 'park' when it is disabled or its circuit is open or half-open
 * (unless this row is the probe), else 'wait'. Two primary-key probes per row; callers evaluate
 * it only for rows that return to the queue.
 */
export function returnFate(sql: Executor, endpointId: Fragment, deliveryId: Fragment): Fragment {
  return sql`(
    SELECT CASE
      WHEN fe.deleted_at IS NOT NULL THEN 'cancel'
      WHEN NOT fe.enabled OR (coalesce(fh.state, 'closed') <> 'closed'
                              AND NOT coalesce(fh.probe_delivery_id = ${deliveryId}, false)) THEN 'park'
      ELSE 'wait' END
    FROM endpoints fe LEFT JOIN endpoint_health fh ON fh.endpoint_id = fe.id
    WHERE fe.id = ${endpointId})`;
}

/** The state of a row with fate `fate` (returnFate, not 'cancel') going back to the queue. */
export function returnState(sql: Executor, fate: Fragment): Fragment {
  return sql`CASE WHEN ${fate} = 'park' THEN 'parked' ELSE 'scheduled' END`;
}

/**
 * The state a new or requeued row starts in (enqueue, replay): scheduled when its endpoint can
 * take it now (returnFate 'wait'), else parked. A deleted endpoint's row parks too, and the sweep
 * cancels it.
 */
export function initialState(sql: Executor, endpointId: Fragment): Fragment {
  return sql`CASE WHEN ${returnFate(sql, endpointId, sql`NULL::text`)} = 'wait' THEN 'scheduled' ELSE 'parked' END`;
}

/**
 * Transition park: every scheduled row of the endpoints selected by `endpointIds` (a subquery
 * returning ids) is parked; with `keepProbe`, the probe of a half-open circuit stays scheduled. Leased rows are left alone: they park themselves when they come back
 * (returnFate). A circuit that is opening has no probe any more (the same statement clears it,
 * which this one cannot see yet), so there `keepProbe` is false.
 */
export function park(sql: Executor, endpointIds: Fragment, keepProbe = false): Fragment {
  return sql`
    UPDATE delivery_queue q SET state = 'parked'
    WHERE q.endpoint_id IN (${endpointIds}) AND q.state = 'scheduled'
      ${
        keepProbe
          ? sql`AND NOT EXISTS (SELECT 1 FROM endpoint_health h WHERE h.endpoint_id = q.endpoint_id
                                  AND h.state = 'half_open' AND h.probe_delivery_id = q.delivery_id)`
          : sql``
      }
    RETURNING q.delivery_id`;
}

/**
 * Transition unpark: the parked rows of the endpoints selected by `endpointIds` are scheduled
 * now, where the endpoint is enabled and not deleted (held rows are not parked: they wait for
 * their key's head, never for their endpoint). The caller selects only endpoints whose circuit
 * is closed (it is usually closing it in the same statement, which this one cannot see).
 * Returns each unparked row's delivery and endpoint.
 */
export function unpark(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    UPDATE delivery_queue q SET state = 'scheduled', next_attempt_at = now()
    FROM endpoints e
    WHERE e.id = q.endpoint_id AND q.endpoint_id IN (${endpointIds}) AND e.enabled AND e.deleted_at IS NULL
      AND q.state = 'parked'
    RETURNING q.delivery_id, q.endpoint_id`;
}

/**
 * Transition cancel: the waiting rows of the endpoints selected by `endpointIds` leave the queue
 * and their deliveries become `cancelled` (a deleted endpoint). Leased rows are cancelled when
 * they come back (returnFate). Use as `WITH dropped AS (${cancelWaiting(...)}) ${markCancelled}`.
 */
export function cancelWaiting(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    DELETE FROM delivery_queue q
    WHERE q.endpoint_id IN (${endpointIds})
      -- spelt out, so each arm uses its state's partial index
      AND (q.state = 'scheduled' OR q.state = 'parked' OR q.state = 'held')
    RETURNING q.delivery_id`;
}

/** Marks the deliveries named by `deliveryIds` (a subquery) cancelled. */
export function markCancelled(sql: Executor, deliveryIds: Fragment): Fragment {
  return sql`
    UPDATE deliveries SET status = 'cancelled', updated_at = now()
    WHERE id IN (${deliveryIds})`;
}

/**
 * The safety sweep of the breaker tick. Two statements that race can leave a row in a state the
 * rule does not allow: scheduled while its endpoint was being disabled, deleted or its circuit
 * opened (a completion whose snapshot still saw it open); parked while its endpoint was being
 * deleted, or after its circuit closed and its endpoint's rows were unparked. Each is put right
 * here, within a tick: parked, cancelled or scheduled. It walks only endpoints that have
 * scheduled or parked rows (one index descent each, like the claim), so its cost follows the
 * backlog's endpoints, not the endpoint table.
 */
export async function sweepUnclaimable(
  sql: Executor,
): Promise<{ parked: number; cancelled: number; unparked: number }> {
  const [row] = await sql<{ parked: number; cancelled: number; unparked: number }[]>`
    ${withWaitingEndpoints(sql)},
    ${parkedEndpoints(sql)},
    stuck AS (
      SELECT e.id, e.deleted_at IS NOT NULL AS gone FROM waiting w
      JOIN endpoints e ON e.id = w.endpoint_id LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
      WHERE NOT e.enabled OR e.deleted_at IS NOT NULL OR coalesce(h.state, 'closed') <> 'closed'
    ),
    parked_wrongly AS (
      SELECT e.id, e.deleted_at IS NOT NULL AS gone FROM parked_endpoints p
      JOIN endpoints e ON e.id = p.endpoint_id LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
      WHERE e.deleted_at IS NOT NULL OR (e.enabled AND coalesce(h.state, 'closed') = 'closed')
    ),
    parked AS (${park(sql, sql`SELECT id FROM stuck WHERE NOT gone`, true)}),
    unparked AS (${unpark(sql, sql`SELECT id FROM parked_wrongly WHERE NOT gone`)}),
    dropped AS (${cancelWaiting(
      sql,
      sql`SELECT id FROM stuck WHERE gone UNION SELECT id FROM parked_wrongly WHERE gone`,
    )}),
    cancelled AS (${markCancelled(sql, sql`SELECT delivery_id FROM dropped`)})
    SELECT (SELECT count(*) FROM parked)::int AS parked, (SELECT count(*) FROM dropped)::int AS cancelled,
      (SELECT count(*) FROM unparked)::int AS unparked`;
  return row ?? { parked: 0, cancelled: 0, unparked: 0 };
}
