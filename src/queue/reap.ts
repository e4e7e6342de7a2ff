/**
 * Transition reap: rows whose lease ran out (their dispatcher died or stalled) come back to the
 * queue, or leave it when their attempts are used up. Run by every dispatcher's maintenance
 * timer; SKIP LOCKED makes concurrent reapers take disjoint rows.
 */
import type { Executor } from '../db/connect.js';
import { type RetryPolicy, retrySql } from '../deliveries/retry-policy.js';
import { DEFAULT_OPS_EVENTS_PER_MINUTE, deadLetterEventCtes, deadLetterRows } from '../ops-events/events.js';
import { settledKeys, unholdHeads } from './ordering.js';
import { returnFate, returnState } from './states.js';

/**
 * Returns deliveries whose lease ran out (their dispatcher died or stalled) to the queue, as the
 * queue-state rule says (scheduled, parked, or cancelled for a deleted endpoint or an expunged
 * message). The claimed attempt stays counted, so a delivery that kills its dispatcher every
 * time still ends in dead_letter instead of looping forever, and the retry policy decides as for
 * any failed attempt (deliveries/retry-policy.ts retrySql, with the endpoint's own overrides):
 * dead-lettered once its attempts are used up, else scheduled after the backoff.
 */
export async function reapExpiredLeases(
  sql: Executor,
  policy: RetryPolicy,
  options: { limit?: number; opsEventsPerMinute?: number } = {},
): Promise<{ requeued: number; deadLettered: number; cancelled: number }> {
  const { limit = 1000, opsEventsPerMinute = DEFAULT_OPS_EVENTS_PER_MINUTE } = options;
  const retry = retrySql(sql, policy, sql`re`);
  const rows = await sql<{ status: string; key_endpoint_id: string | null; ordering_key: string | null }[]>`
    WITH expired AS (
      SELECT q.delivery_id, q.endpoint_id, q.ordering_key, q.state, q.attempt_count,
        ${retry.exhausted(sql`q.attempt_count`)} AS exhausted,
        ${retry.backoffSeconds(sql`q.attempt_count`)} AS backoff_seconds
      FROM delivery_queue q LEFT JOIN endpoints re ON re.id = q.endpoint_id
      WHERE q.lease_expires_at < now()
      ORDER BY q.lease_expires_at
      LIMIT ${limit}
      FOR UPDATE OF q SKIP LOCKED
    ),
    fated AS (
      -- a cancelling row (its message expunged while in flight) leaves the queue
      SELECT x.*, CASE WHEN x.state = 'cancelling' THEN 'cancel'
                       ELSE ${returnFate(sql, sql`x.endpoint_id`, sql`x.delivery_id`)} END AS fate
      FROM expired x
    ),
    requeued AS (
      UPDATE delivery_queue q SET state = ${returnState(sql, sql`f.fate`)}, lease_token = NULL,
        lease_expires_at = NULL, next_attempt_at = now() + f.backoff_seconds * interval '1 second'
      FROM fated f WHERE q.delivery_id = f.delivery_id AND NOT f.exhausted AND f.fate <> 'cancel'
    ),
    dropped AS (
      DELETE FROM delivery_queue q USING fated f
      WHERE q.delivery_id = f.delivery_id AND (f.exhausted OR f.fate = 'cancel')
    ),
    done AS (
    UPDATE deliveries d SET
      status = CASE WHEN f.fate = 'cancel' THEN 'cancelled' WHEN f.exhausted THEN 'dead_letter' ELSE 'failed' END,
      dead_at = CASE WHEN f.exhausted AND f.fate <> 'cancel' THEN now() ELSE d.dead_at END,
      -- the attempt it was claimed for counts (see above), on the record as on the row
      attempt_count = f.attempt_count,
      last_error_class = 'lease_expired', last_error = 'dispatcher lease expired before a result was recorded',
      updated_at = now()
    FROM fated f WHERE d.id = f.delivery_id
    RETURNING d.id, d.status, d.endpoint_id, d.message_id, d.attempt_count, d.last_status_code, d.last_error_class,
      CASE WHEN f.exhausted OR f.fate = 'cancel' THEN f.endpoint_id END AS key_endpoint_id, f.ordering_key
    ),
    ${deadLetterEventCtes(sql, 'dl', deadLetterRows(sql, sql`done`), opsEventsPerMinute)}
    SELECT status, key_endpoint_id, ordering_key FROM done`;
  // A dead-lettered or cancelled keyed head lets its key's next delivery go (ordering.ts).
  await unholdHeads(sql, settledKeys(rows));
  const count = (status: string) => rows.filter((r) => r.status === status).length;
  return { requeued: count('failed'), deadLettered: count('dead_letter'), cancelled: count('cancelled') };
}
