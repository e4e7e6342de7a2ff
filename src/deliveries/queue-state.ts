/**
 * The one owner of a delivery_queue row's state. Every statement that moves a queued row between
 * states composes the fragments below instead of writing the rule again. The states:
 *
 * - due:    waiting (`lease_expires_at IS NULL`) with a finite `next_attempt_at`; claimable once
 *           that time has come, if its endpoint is enabled and its circuit closed;
 * - leased: claimed by a dispatcher (`lease_expires_at IS NOT NULL`), i.e. in flight;
 * - parked: waiting at `next_attempt_at = 'infinity'`: its endpoint is disabled or its circuit is
 *           not closed. Still queued (nothing is lost), at the far end of every index, never due;
 * - probe:  the one due row of a half-open circuit, named by `endpoint_health.probe_delivery_id`;
 * - held:   a keyed row behind its key's head (`held`, at 'infinity'): only deliveries/ordering.ts
 *           unholds it. `park` never sees it (already at 'infinity'), `release` skips it.
 *
 * The rule they all keep: a waiting row of a disabled endpoint or of a circuit that is not
 * closed (other than the probe) is parked; a waiting row of a deleted endpoint does not exist
 * (its delivery is `cancelled`). Why, and the transitions: docs/architecture.md ("Queue states").
 */
import type { Executor, Fragment } from '../db/connect.js';
import { opsEventCtes } from '../ops-events/events.js';

/**
 * Opens a `WITH RECURSIVE` whose CTE `waiting(endpoint_id)` lists the endpoints that have waiting
 * (unleased) rows, by a loose index scan over delivery_queue_endpoint_due_idx: one descent per
 * endpoint, so its cost follows the backlog's endpoints, not its rows. Its last row is NULL (where
 * the recursion stops); readers filter it. The claim and the unclaimable sweep both start here.
 */
export function withWaitingEndpoints(sql: Executor): Fragment {
  return sql`
    WITH RECURSIVE waiting AS (
      (SELECT endpoint_id FROM delivery_queue WHERE lease_expires_at IS NULL ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT q.endpoint_id FROM delivery_queue q
              WHERE q.lease_expires_at IS NULL AND q.endpoint_id > w.endpoint_id
              ORDER BY q.endpoint_id LIMIT 1)
      FROM waiting w WHERE w.endpoint_id IS NOT NULL
    )`;
}

/** What a row coming back to the queue (retry, release, reap) becomes, given its endpoint now. */
export type ReturnFate = 'wait' | 'park' | 'cancel';

/**
 * A scalar SQL expression (pass qualified column references: it has tables of its own): the fate of a row of endpoint `endpointId` (delivery `deliveryId`)
 * that is about to wait again: 'cancel' when the endpoint is deleted, 'park' when it is disabled
 * or its circuit is open or half-open (unless this row is the probe), else 'wait'. Two primary-key
 * probes per row; callers evaluate it only for rows that return to the queue.
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

/** The `next_attempt_at` of a row with fate `fate` that would otherwise be due at `at`. */
export function waitUntil(sql: Executor, fate: Fragment, at: Fragment): Fragment {
  return sql`CASE WHEN ${fate} = 'park' THEN 'infinity'::timestamptz ELSE ${at} END`;
}

/**
 * Where a new or requeued row starts (enqueue, replay): at `at` when its endpoint can take it now
 * (returnFate 'wait'), else parked. A deleted endpoint's row parks too, and the sweep cancels it.
 */
export function initialAt(sql: Executor, endpointId: Fragment, at: Fragment): Fragment {
  return sql`CASE WHEN ${returnFate(sql, endpointId, sql`NULL::text`)} = 'wait' THEN ${at} ELSE 'infinity'::timestamptz END`;
}

/**
 * Transition park: every waiting, unparked row of the endpoints selected by `endpointIds` (a
 * subquery returning ids) moves to 'infinity'; with `keepProbe`, the probe of a half-open
 * circuit stays due. Leased rows are left alone: they park themselves when they come back
 * (returnFate). A circuit that is opening has no probe any more (the same statement clears it,
 * which this one cannot see yet), so there `keepProbe` is false.
 */
export function park(sql: Executor, endpointIds: Fragment, keepProbe = false): Fragment {
  return sql`
    UPDATE delivery_queue q SET next_attempt_at = 'infinity'
    WHERE q.endpoint_id IN (${endpointIds}) AND q.lease_expires_at IS NULL AND q.next_attempt_at < 'infinity'
      ${
        keepProbe
          ? sql`AND NOT EXISTS (SELECT 1 FROM endpoint_health h WHERE h.endpoint_id = q.endpoint_id
                                  AND h.state = 'half_open' AND h.probe_delivery_id = q.delivery_id)`
          : sql``
      }
    RETURNING q.delivery_id`;
}

/**
 * Transition release: the parked rows of the endpoints selected by `endpointIds` become due now,
 * where the endpoint is enabled and not deleted. The caller selects only endpoints whose circuit
 * is closed (it is usually closing it in the same statement, which this one cannot see).
 */
export function release(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    UPDATE delivery_queue q SET next_attempt_at = now()
    FROM endpoints e
    WHERE e.id = q.endpoint_id AND q.endpoint_id IN (${endpointIds}) AND e.enabled AND e.deleted_at IS NULL
      AND q.lease_expires_at IS NULL AND q.next_attempt_at = 'infinity'
      -- a held row (ordering.ts) waits for its key's head, not for its endpoint: never released here
      AND NOT q.held
    RETURNING q.delivery_id`;
}

/** Transition reset breaker: the circuits of `endpointIds` close and forget their history. */
export function resetBreaker(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    UPDATE endpoint_health SET state = 'closed', consecutive_failures = 0, opened_at = NULL,
      cooldown_seconds = NULL, probe_delivery_id = NULL, failing_since = NULL, updated_at = now()
    WHERE endpoint_id IN (${endpointIds})
    RETURNING endpoint_id`;
}

/**
 * Transition cancel: the waiting rows of the endpoints selected by `endpointIds` leave the queue
 * and their deliveries become `cancelled` (a deleted endpoint). Leased rows are cancelled when
 * they come back (returnFate). Use as `WITH dropped AS (${cancelWaiting(...)}) ${markCancelled}`.
 */
export function cancelWaiting(sql: Executor, endpointIds: Fragment): Fragment {
  return sql`
    DELETE FROM delivery_queue q
    WHERE q.endpoint_id IN (${endpointIds}) AND q.lease_expires_at IS NULL
    RETURNING q.delivery_id`;
}

/** Marks the deliveries named by `deliveryIds` (a subquery) cancelled. */
export function markCancelled(sql: Executor, deliveryIds: Fragment): Fragment {
  return sql`
    UPDATE deliveries SET status = 'cancelled', updated_at = now()
    WHERE id IN (${deliveryIds})`;
}

/**
 * Disabling, coded once (API PATCH, 410 Gone, failing continuously): `targets` is a subquery of
 * `(id, reason)`; enabled endpoints among them are disabled with that reason and their waiting
 * rows parked, and `endpoint.disabled` enqueued for the operators, in one statement. Returns
 * the ids that were disabled now.
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
 * Re-enabling: the endpoints come back with a closed circuit and their parked rows become due.
 * The breaker reset must be visible to the release, so they are two statements (the caller's
 * transaction holds them together).
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
  if (enabled.length > 0) await sql`${release(sql, sql`SELECT unnest(${enabled}::text[])`)}`;
  return enabled;
}

/**
 * The safety sweep of the breaker tick: a row that came back finite while its endpoint was being
 * disabled, deleted or its circuit opened (the two statements raced) is parked or cancelled
 * here, within a tick. It walks only endpoints that have waiting rows (one index descent each,
 * like the claim), so its cost follows the backlog's endpoints, not the endpoint table.
 */
export async function sweepUnclaimable(sql: Executor): Promise<{ parked: number; cancelled: number }> {
  const [row] = await sql<{ parked: number; cancelled: number }[]>`
    ${withWaitingEndpoints(sql)},
    stuck AS (
      SELECT e.id, e.deleted_at IS NOT NULL AS gone FROM waiting w
      JOIN endpoints e ON e.id = w.endpoint_id LEFT JOIN endpoint_health h ON h.endpoint_id = e.id
      WHERE NOT e.enabled OR e.deleted_at IS NOT NULL OR coalesce(h.state, 'closed') <> 'closed'
    ),
    parked AS (${park(sql, sql`SELECT id FROM stuck WHERE NOT gone`, true)}),
    dropped AS (${cancelWaiting(sql, sql`SELECT id FROM stuck WHERE gone`)}),
    cancelled AS (${markCancelled(sql, sql`SELECT delivery_id FROM dropped`)})
    SELECT (SELECT count(*) FROM parked)::int AS parked, (SELECT count(*) FROM dropped)::int AS cancelled`;
  return row ?? { parked: 0, cancelled: 0 };
}
