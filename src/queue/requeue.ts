/**
 * Transition requeue (replay, resend): a settled or failed delivery goes back to the queue with a
 * fresh retry budget. The caller (src/deliveries/replay.ts) has locked the deliveries and decides
 * which ones; this writes their queue rows.
 */
import type { Executor, Fragment } from '../db/connect.js';
import { initialState } from './states.js';

/**
 * The statement for a CTE (`queued AS (…)`) that requeues the rows of `previous`, a CTE of `id,
 * endpoint_id, message_id, delay_ms, ordering_key, sequence, traceparent` (ordering_key NULL when
 * unkeyed; traceparent: the replay's trace, NULL without one, kept on the queue row for the claim):
 * - no queue row (settled): a new one, attempt count 0, due after its delay or parked when its
 *   endpoint cannot take it (a replay into an open circuit parks and is unparked with the rest);
 *   a keyed one re-enters held, behind its key's head (the caller's unholdHeads releases it in
 *   sequence order, ordering.ts);
 * - a waiting queue row (failed, awaiting its retry): it keeps its place with a fresh count; a
 *   held one stays held, a keyed head is due again now, an unkeyed one at its paced time;
 * - a leased row (in flight): left alone, and not returned.
 * Returns `delivery_id, endpoint_id, ordering_key` of the rows requeued.
 */
export function requeue(sql: Executor, previous: Fragment): Fragment {
  return sql`
    INSERT INTO delivery_queue (delivery_id, endpoint_id, message_id, state, next_attempt_at, attempt_count,
                                ordering_key, sequence, traceparent)
    SELECT p.id, p.endpoint_id, p.message_id,
      CASE WHEN p.ordering_key IS NULL THEN ${initialState(sql, sql`p.endpoint_id`)} ELSE 'held' END,
      now() + p.delay_ms * interval '1 millisecond', 0, p.ordering_key, p.sequence, p.traceparent FROM ${previous} p
    ON CONFLICT (delivery_id) DO UPDATE SET attempt_count = 0, traceparent = excluded.traceparent,
      -- a keyed head (not held) is tried again now; a held row keeps its place behind its head
      state = CASE WHEN delivery_queue.state = 'held' THEN 'held'
        ELSE ${initialState(sql, sql`delivery_queue.endpoint_id`)} END,
      next_attempt_at = CASE WHEN delivery_queue.state = 'held' THEN delivery_queue.next_attempt_at
        WHEN excluded.state = 'held' THEN now() ELSE excluded.next_attempt_at END
      WHERE delivery_queue.lease_expires_at IS NULL
    RETURNING delivery_id, endpoint_id, ordering_key`;
}
