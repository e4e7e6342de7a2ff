/**
 * Transition release (hand back): claimed rows that were never sent go back to the queue
 * uncharged, as the queue-state rule says (states.ts). Used by the dispatcher for shutdown, a
 * lease too short to send, an endpoint disabled meanwhile, a circuit that opened while the rows
 * waited in the local buffer, and rows this dispatcher no longer knows it holds (a claim whose
 * answer was lost, results a failover lost).
 */
import type { Executor, Fragment } from '../db/connect.js';
import { markCancelled, returnFate, returnState } from './states.js';

/**
 * Hands back claimed deliveries that were never sent (shutdown, lease too short to send, endpoint
 * disabled meanwhile, the egress proxy down): the attempt is not charged, and the row waits again
 * as the queue-state rule says (due now — or after `delayMs` — parked, or cancelled for a deleted
 * endpoint). Returns how many were handed back.
 */
export async function releaseClaims(
  sql: Executor,
  claims: { id: string; leaseToken: string }[],
  delayMs = 0,
): Promise<number> {
  if (claims.length === 0) return 0;
  return handBack(
    sql,
    sql`SELECT q.delivery_id, q.lease_token, q.endpoint_id, q.state
        FROM unnest(${claims.map((c) => c.id)}::text[], ${claims.map((c) => c.leaseToken)}::uuid[]) AS u(id, lease_token)
        JOIN delivery_queue q ON q.delivery_id = u.id AND q.lease_token = u.lease_token
        FOR UPDATE OF q`,
    delayMs,
  );
}

/**
 * Hands back every row leased under these lease tokens (this dispatcher's claims of the last
 * lease) except the deliveries it still holds: rows it does not know it holds. A claim whose
 * answer never came (the connection died after the commit) leaves such rows; so does a failover,
 * where the new primary lacks the last asynchronous commits of the dispatcher (its results, and
 * so the row is still leased under a claim whose deliveries were sent and settled here). Without
 * it they would wait out their lease. Leased rows are few (at most what the dispatchers hold),
 * so the scan of them is cheap. Why: docs/architecture.md ("A claim whose answer is lost").
 */
export async function releaseStrandedClaims(
  sql: Executor,
  leaseTokens: string[],
  heldDeliveryIds: string[],
): Promise<number> {
  if (leaseTokens.length === 0) return 0;
  return handBack(
    sql,
    sql`SELECT q.delivery_id, q.lease_token, q.endpoint_id, q.state FROM delivery_queue q
        WHERE q.lease_expires_at IS NOT NULL AND q.lease_token = ANY(${leaseTokens}::uuid[])
          AND q.delivery_id <> ALL(${heldDeliveryIds}::text[])
        FOR UPDATE OF q`,
  );
}

/**
 * releaseClaims' transition for the leased rows `claimed` selects (delivery_id, lease_token,
 * endpoint_id, state) and locks. A `cancelling` row (its message expunged) leaves the queue. A
 * returned row is due `delayMs` from now (0: at once). The lock is what makes the state read
 * current: without it, a row an expunge marked `cancelling` after this statement's snapshot was
 * judged 'wait', then neither dropped nor (no longer `leased`) returned, and sat until its lease
 * ran out.
 */
async function handBack(sql: Executor, claimed: Fragment, delayMs = 0): Promise<number> {
  const at = delayMs > 0 ? sql`now() + make_interval(secs => ${delayMs / 1000})` : sql`now()`;
  const [row] = await sql<{ n: number }[]>`
    WITH r AS (
      SELECT c.delivery_id, c.lease_token,
        CASE WHEN c.state = 'cancelling' THEN 'cancel'
             ELSE ${returnFate(sql, sql`c.endpoint_id`, sql`c.delivery_id`)} END AS fate
      FROM (${claimed}) c
    ),
    dropped AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.fate = 'cancel'
      RETURNING q.delivery_id
    ),
    cancelled AS (${markCancelled(sql, sql`SELECT delivery_id FROM dropped`)}),
    returned AS (
      UPDATE delivery_queue q SET
        state = ${returnState(sql, sql`r.fate`)}, attempt_count = q.attempt_count - 1,
        lease_token = NULL, lease_expires_at = NULL, next_attempt_at = ${at}
      FROM r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.fate <> 'cancel'
        AND q.state = 'leased'
      RETURNING q.delivery_id
    )
    SELECT ((SELECT count(*) FROM dropped) + (SELECT count(*) FROM returned))::int AS n`;
  return row?.n ?? 0;
}
