/**
 * Transition remove for expunge: a message whose payload was erased has nothing left to send.
 * Its waiting deliveries leave the queue and become `cancelled`; one in flight is not taken from
 * its dispatcher (its lease holder owns the row, and a keyed head must stay in the queue until it
 * is back, or its key's next delivery would be sent beside it) but marked `cancelling`: when its
 * result comes back it leaves the queue, is `cancelled` unless it was delivered, and its attempt
 * keeps no response snippet (complete.ts). Nothing written after the erasure keeps what the
 * partner echoed back.
 */
import type { Executor } from '../db/connect.js';
import { type OrderingKey, unholdHeads } from './ordering.js';

/**
 * Removes the queued deliveries of message `messageId` in the caller's transaction, the one that
 * erased its payload; call it before erasing the attempts' snippets. Two statements: the first
 * locks every queue row of the message, waiting for a claim or a result write that holds one
 * right now; the second, with a snapshot taken after those locks, cancels the waiting rows and
 * marks the leased ones. So every result written before is seen by the caller's snippet erasure
 * that follows, and every result written after sees the mark. A cancelled keyed delivery lets its
 * key's next one go. Returns how many deliveries were cancelled now and how many in flight were
 * marked.
 */
export async function cancelExpungedDeliveries(
  tx: Executor,
  messageId: string,
): Promise<{ cancelled: number; inFlight: number }> {
  await tx`
    SELECT q.delivery_id FROM deliveries d JOIN delivery_queue q ON q.delivery_id = d.id
    WHERE d.message_id = ${messageId}
    ORDER BY q.delivery_id
    FOR UPDATE OF q`;
  const [row] = await tx<{ cancelled: number; in_flight: number; keys: OrderingKey[] }[]>`
    WITH mine AS (SELECT d.id FROM deliveries d WHERE d.message_id = ${messageId}),
    unqueued AS (
      DELETE FROM delivery_queue q USING mine
      WHERE q.delivery_id = mine.id AND q.state IN ('scheduled', 'parked', 'held')
      RETURNING q.delivery_id, q.endpoint_id, q.ordering_key
    ),
    marked AS (
      UPDATE delivery_queue q SET state = 'cancelling' FROM mine
      WHERE q.delivery_id = mine.id AND q.state = 'leased'
      RETURNING q.delivery_id
    ),
    cancelled AS (
      UPDATE deliveries d SET status = 'cancelled', updated_at = now()
      FROM unqueued u WHERE d.id = u.delivery_id
      RETURNING d.id
    )
    SELECT (SELECT count(*) FROM cancelled)::int AS cancelled, (SELECT count(*) FROM marked)::int AS in_flight,
      (SELECT coalesce(json_agg(json_build_object('endpointId', endpoint_id, 'orderingKey', ordering_key)), '[]')
       FROM unqueued WHERE ordering_key IS NOT NULL) AS keys`;
  // A cancelled keyed delivery lets the next one of its key go (ordering.ts); a key whose head is
  // in flight keeps waiting for it.
  await unholdHeads(tx, row!.keys);
  return { cancelled: row!.cancelled, inFlight: row!.in_flight };
}
