/**
 * An endpoint's lifecycle, coded once: disable, enable, delete, and close its circuit by hand.
 * Each changes the endpoint (or its health row) and, in the same statement or transaction, moves
 * its queued deliveries through the queue's own transitions (src/queue/states.ts): disabling
 * parks them, enabling and closing the circuit unpark them, deleting cancels them. The API, the
 * 410 Gone handler, the breaker tick and tenant deletion all come here, so the rule cannot drift
 * between them. Why: docs/architecture.md ("Queue states").
 */
import type { Executor, Fragment, Sql } from '../db/connect.js';
import { opsEventCtes } from '../ops-events/events.js';
import { cancelWaiting, markCancelled, park, unpark } from '../queue/states.js';
import { wakeDispatchersIfAny } from '../queue/wakeup.js';

/** A circuit that changed state (the breaker, or an operator closing it by hand). */
export interface CircuitChange {
  endpointId: string;
  from: string;
  to: string;
}

/** A circuit closed by hand, and how many of its parked deliveries became due now. */
export interface ClosedCircuit extends CircuitChange {
  released: number;
}

/** The health-row update that closes the circuits of `endpointIds` and forgets their history. */
function resetBreaker(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    UPDATE endpoint_health SET state = 'closed', consecutive_failures = 0, opened_at = NULL,
      cooldown_seconds = NULL, probe_delivery_id = NULL, failing_since = NULL, updated_at = now()
    WHERE endpoint_id IN (${endpointIds})
    RETURNING endpoint_id`;
}

/**
 * Disable: `targets` is a subquery of `(id, reason)`; the enabled, live endpoints among them are
 * disabled with that reason, their waiting rows parked and `endpoint.disabled` enqueued for the
 * operators, in one statement (API PATCH, 410 Gone, failing continuously). Returns the ids that
 * were disabled now.
 */
export async function disableEndpoints(sql: Executor, targets: Fragment): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    WITH target AS (${targets}),
    disabled AS (
      UPDATE endpoints e SET enabled = false, disabled_reason = t.reason, disabled_at = now(), updated_at = now()
      FROM target t WHERE e.id = t.id AND e.enabled AND e.deleted_at IS NULL
      RETURNING e.id, e.disabled_reason
    ),
    parked AS (${park(sql, sql`SELECT id FROM disabled`)}),
    -- endpoint.disabled to the operators, committed with the disable (ops-events/events.ts)
    ${opsEventCtes(
      sql,
      'ops',
      sql`SELECT 'endpoint.disabled'::text AS type, NULL::text AS tenant_id, id AS endpoint_id,
            jsonb_build_object('reason', disabled_reason) AS data FROM disabled`,
    )}
    SELECT id FROM disabled`;
  return rows.map((r) => r.id);
}

/**
 * Enable: the disabled, live endpoints among `ids` come back with a closed circuit and their
 * parked rows become due. The breaker reset must be visible to the unpark, so they are two
 * statements: call it inside a transaction (the API's update runs in one).
 */
export async function enableEndpoints(sql: Executor, ids: string[]): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    WITH enabled AS (
      UPDATE endpoints SET enabled = true, disabled_reason = NULL, disabled_at = NULL, updated_at = now()
      WHERE id = ANY(${ids}::text[]) AND NOT enabled AND deleted_at IS NULL
      RETURNING id
    ),
    reset AS (${resetBreaker(sql, sql`SELECT id FROM enabled`)})
    SELECT id FROM enabled`;
  const enabled = rows.map((r) => r.id);
  if (enabled.length > 0) {
    await sql`
      WITH unparked AS (${unpark(sql, sql`SELECT unnest(${enabled}::text[])`)})
      SELECT ${wakeDispatchersIfAny(sql, sql`unparked`)} AS woken`;
  }
  return enabled;
}

/**
 * Delete (soft): the live endpoints matching `where` (a condition on `endpoints`, e.g. an id in
 * the caller's scope, or a tenant) disappear from the API and the fan-out, and their waiting
 * deliveries are cancelled; the delivery history stays readable. Deliveries in flight are
 * cancelled when they come back (queue/states.ts returnFate), unless they were delivered or
 * dead-lettered. Two statements in one transaction (the caller's, or a short one of its own):
 * the delete waits for enqueues that share-locked the endpoint (deliveries/enqueue.ts), and only
 * a statement started after it sees what they queued. Returns the deleted ids and how many
 * deliveries were cancelled.
 */
export async function deleteEndpoints(
  sql: Executor,
  where: Fragment,
): Promise<{ ids: string[]; cancelled: number }> {
  const run = async (tx: Executor) => {
    // Cancelling the waiting deliveries takes as long as the backlog is large (a tenant's whole
    // queue when the tenant goes): this transaction is not cut by the API pool's statement_timeout.
    await tx`SET LOCAL statement_timeout = 0`;
    const gone = await tx<{ id: string }[]>`
      UPDATE endpoints SET deleted_at = now(), enabled = false, disabled_reason = 'deleted', updated_at = now()
      WHERE deleted_at IS NULL AND (${where})
      RETURNING id`;
    const ids = gone.map((g) => g.id).sort();
    if (ids.length === 0) return { ids, cancelled: 0 };
    const [row] = await tx<{ cancelled: number }[]>`
      WITH dropped AS (${cancelWaiting(tx, tx`SELECT unnest(${ids}::text[])`)}),
      cancelled AS (${markCancelled(tx, tx`SELECT delivery_id FROM dropped`)})
      SELECT count(*)::int AS cancelled FROM dropped`;
    return { ids, cancelled: row?.cancelled ?? 0 };
  };
  // A pool starts its own short transaction; inside a transaction, the statements join it.
  if ('begin' in sql) return (sql as Sql).begin((tx) => run(tx));
  return run(sql);
}

/**
 * Close the circuit by hand (an operator who knows the partner is back): the open or half-open
 * circuits of the live endpoints among `ids` close and forget their failures (so the endpoint is
 * not disabled for a `failing_since` that is over), their parked rows become due where the
 * endpoint is enabled, and `endpoint.circuit_closed` is enqueued for the operators, in one
 * statement. A circuit already closed is left alone. Returns the circuits that changed, each with
 * how many deliveries it released (none for a disabled endpoint: they wait for the enable).
 */
export async function closeCircuits(sql: Executor, ids: string[]): Promise<ClosedCircuit[]> {
  const rows = await sql<{ endpoint_id: string; old_state: string; released: number }[]>`
    WITH target AS (
      SELECT h.endpoint_id, h.state AS old_state FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id
      WHERE h.endpoint_id = ANY(${ids}::text[]) AND e.deleted_at IS NULL AND h.state <> 'closed'
      FOR UPDATE OF h
    ),
    closed AS (${resetBreaker(sql, sql`SELECT endpoint_id FROM target`)}),
    unparked AS (${unpark(sql, sql`SELECT endpoint_id FROM closed`)}),
    ${opsEventCtes(
      sql,
      'ops',
      sql`SELECT 'endpoint.circuit_closed'::text AS type, NULL::text AS tenant_id, endpoint_id,
            jsonb_build_object('previous_state', old_state, 'closed_by', 'operator') AS data
          FROM target`,
    )}
    SELECT endpoint_id, old_state, ${wakeDispatchersIfAny(sql, sql`unparked`)} AS woken,
      (SELECT count(*) FROM unparked u WHERE u.endpoint_id = target.endpoint_id)::int AS released
    FROM target ORDER BY endpoint_id`;
  return rows.map((r) => ({
    endpointId: r.endpoint_id,
    from: r.old_state,
    to: 'closed',
    released: r.released,
  }));
}
