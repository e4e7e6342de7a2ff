/**
 * Row-level retention of deliveries and messages (the attempt log goes by partition:
 * partitions.ts). Each call is one statement over at most `limit` messages, so one transaction
 * stays small and holds its row locks for milliseconds. Both walks follow an index in id order
 * (ids are time-ordered, so "older than the window" is an id range): the primary key of
 * `messages` for removal, the partial index of live payloads for expiry. Each pass walks from
 * the oldest id with a keyset cursor, so rows that must stay (a message with a queued delivery)
 * are stepped over once per pass instead of being read again by every batch.
 */
import type { Sql } from '../db/connect.js';

/** Statuses in which a delivery is finished with and may be removed. */
export const SETTLED = ['delivered', 'dead_letter', 'cancelled'];

/**
 * The id that every id created before `now() - seconds` sorts below (the 12 hex digits of
 * Unix milliseconds that start every hookpost id), from the database clock.
 */
export async function cutoffId(sql: Sql, prefix: string, seconds: number): Promise<{ id: string; at: Date }> {
  const [row] = await sql<{ id: string; at: Date }[]>`
    SELECT ${prefix} || lpad(to_hex((extract(epoch FROM t.at) * 1000)::bigint), 12, '0') AS id, t.at
    FROM (SELECT now() - ${seconds} * interval '1 second' AS at) t`;
  return row!;
}

export interface BatchResult {
  /** The last message id examined: the next batch starts after it; null when the window is done. */
  lastId: string | null;
  deliveries: number;
  messages: number;
}

/**
 * Removes, among the next `limit` messages after `afterId` created before `cutoff`, their settled
 * deliveries that have no queue row (never a queued one, whatever its age), the replay records of
 * those, and each message once no delivery of it is left. The message goes in the same
 * statement as its last delivery, and with it its idempotency keys. Rows some other transaction
 * holds right now (a replay) are skipped until the next pass.
 */
export async function removeSettledBatch(
  sql: Sql,
  afterId: string,
  cutoff: string,
  limit: number,
): Promise<BatchResult> {
  const [row] = await sql<{ last_id: string | null; deliveries: number; messages: number }[]>`
    WITH w AS (
      SELECT id FROM messages WHERE id > ${afterId} AND id < ${cutoff} ORDER BY id LIMIT ${limit}
    ),
    doomed AS (
      SELECT d.id FROM deliveries d JOIN w ON d.message_id = w.id
      WHERE d.status = ANY(${SETTLED}::text[])
        AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.delivery_id = d.id)
      FOR UPDATE OF d SKIP LOCKED
    ),
    gone AS (DELETE FROM deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.id),
    replays AS (DELETE FROM replayed_deliveries r USING gone WHERE r.delivery_id = gone.id),
    -- All parts of one statement see the same snapshot, so the deliveries deleted above still
    -- show here: they are excluded by id. The reference check (sql/0010) runs at the end of the statement,
    -- when they are gone.
    msgs AS (
      DELETE FROM messages m USING w WHERE m.id = w.id
        AND NOT EXISTS (
          SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND d.id NOT IN (SELECT id FROM gone))
      RETURNING m.id
    )
    SELECT (SELECT max(id) FROM w) AS last_id,
           (SELECT count(*) FROM gone)::int AS deliveries,
           (SELECT count(*) FROM msgs)::int AS messages`;
  return { lastId: row!.last_id, deliveries: row!.deliveries, messages: row!.messages };
}

export interface ExpiryResult {
  lastId: string | null;
  payloads: number;
  snippets: number;
}

/**
 * Erases the payload bytes of the next `limit` messages created before `cutoff` whose payload is
 * still there and none of whose deliveries is queued (a queued delivery still has to send them),
 * and the response snippets of their attempts. The message row, its hashes and keys, the
 * deliveries and the attempts' metadata stay until the retention window removes them.
 */
export async function expirePayloadsBatch(
  sql: Sql,
  afterId: string,
  cutoff: string,
  limit: number,
): Promise<ExpiryResult> {
  const [row] = await sql<{ last_id: string | null; payloads: number; snippets: number }[]>`
    WITH w AS (
      SELECT id FROM messages
      WHERE payload_expired_at IS NULL AND id > ${afterId} AND id < ${cutoff}
      ORDER BY id LIMIT ${limit}
    ),
    expirable AS (
      SELECT m.id FROM messages m JOIN w ON w.id = m.id
      WHERE NOT EXISTS (
        SELECT 1 FROM deliveries d JOIN delivery_queue q ON q.delivery_id = d.id WHERE d.message_id = m.id)
      FOR UPDATE OF m SKIP LOCKED
    ),
    erased AS (
      UPDATE messages m SET payload = ''::bytea, payload_expired_at = now()
      FROM expirable e WHERE m.id = e.id
      RETURNING m.id
    ),
    snippets AS (
      UPDATE delivery_attempts a SET response_snippet = NULL
      FROM deliveries d JOIN erased e ON d.message_id = e.id
      WHERE a.delivery_id = d.id AND a.response_snippet IS NOT NULL
      RETURNING 1
    )
    SELECT (SELECT max(id) FROM w) AS last_id,
           (SELECT count(*) FROM erased)::int AS payloads,
           (SELECT count(*) FROM snippets)::int AS snippets`;
  return { lastId: row!.last_id, payloads: row!.payloads, snippets: row!.snippets };
}

/** What a pass would remove and erase now (`hookpost purge --dry-run`): counts over the same index ranges. */
export async function countDue(
  sql: Sql,
  removeCutoff: string,
  expireCutoff: string,
): Promise<{ deliveries: number; messages: number; payloads: number }> {
  const [row] = await sql<{ deliveries: number; messages: number; payloads: number }[]>`
    SELECT
      (SELECT count(*) FROM deliveries d JOIN messages m ON m.id = d.message_id
        WHERE m.id < ${removeCutoff} AND d.status = ANY(${SETTLED}::text[])
          AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.delivery_id = d.id))::int AS deliveries,
      (SELECT count(*) FROM messages m WHERE m.id < ${removeCutoff}
        AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id
          AND (d.status <> ALL(${SETTLED}::text[])
               OR EXISTS (SELECT 1 FROM delivery_queue q WHERE q.delivery_id = d.id))))::int AS messages,
      (SELECT count(*) FROM messages m WHERE m.payload_expired_at IS NULL AND m.id < ${expireCutoff}
        AND NOT EXISTS (SELECT 1 FROM deliveries d JOIN delivery_queue q ON q.delivery_id = d.id
          WHERE d.message_id = m.id))::int AS payloads`;
  return row!;
}
