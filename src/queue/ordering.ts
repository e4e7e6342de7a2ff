/**
 * Ordering keys: deliveries to one endpoint with the same `ordering_key` are sent one at a time,
 * in sequence order. A keyed queue row is inserted in state `held` (never claimed); only its
 * key's head is not held. When a head leaves the queue
 * (delivered, dead_letter, cancelled) the next one is released here. Why it is race-free and
 * what it costs: docs/architecture.md ("Ordering keys").
 */
import type { Executor, Fragment, Sql } from '../db/connect.js';
import { initialState } from './states.js';
import { wakeDispatchersIfAny } from './wakeup.js';

/** One (endpoint, ordering key) pair. */
export interface OrderingKey {
  endpointId: string;
  orderingKey: string;
}

/** Distinct pairs, sorted, so every transaction locks key rows in the same order (no deadlock). */
function distinctSorted(keys: OrderingKey[]): OrderingKey[] {
  const seen = new Map<string, OrderingKey>();
  for (const k of keys) seen.set(`${k.endpointId}\u0000${k.orderingKey}`, k);
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
}

/**
 * For each key in `keys` that has no unheld queue row, unholds its lowest-sequence held row:
 * scheduled now, or parked when its endpoint is disabled or its circuit open (initialState),
 * so a parked head parks its key. Two statements in one transaction (the caller's, or a short one
 * of its own): first the key rows are locked, then the release runs with a fresh snapshot
 * (READ COMMITTED), which sees every enqueue and every settle of these keys that committed
 * before the lock was granted. An enqueue holds the same lock from its sequence upsert to its
 * commit, so of an enqueue and a settle of one key, the later one's release sees the other's
 * rows. Returns how many heads were released.
 */
export async function unholdHeads(sql: Executor, keys: OrderingKey[]): Promise<number> {
  const wanted = distinctSorted(keys);
  if (wanted.length === 0) return 0;
  const run = async (tx: Executor): Promise<number> => {
    const endpoints = wanted.map((k) => k.endpointId);
    const names = wanted.map((k) => k.orderingKey);
    // Sent together (postgres.js pipelines a transaction's queries on its connection); the
    // server still runs them one after the other, the second with a snapshot taken after the lock.
    const lock = tx`
      SELECT 1 FROM ordering_keys k
      JOIN unnest(${endpoints}::text[], ${names}::text[]) AS u(endpoint_id, ordering_key)
        ON k.endpoint_id = u.endpoint_id AND k.ordering_key = u.ordering_key
      ORDER BY k.endpoint_id, k.ordering_key
      FOR UPDATE OF k`;
    const release = tx<{ n: number }[]>`
      WITH free AS (
        SELECT u.endpoint_id, u.ordering_key
        FROM unnest(${endpoints}::text[], ${names}::text[]) AS u(endpoint_id, ordering_key)
        WHERE NOT EXISTS (SELECT 1 FROM delivery_queue q
                          WHERE q.endpoint_id = u.endpoint_id AND q.ordering_key = u.ordering_key AND q.state <> 'held')
      ),
      heads AS (
        SELECT (SELECT q.delivery_id FROM delivery_queue q
                WHERE q.endpoint_id = f.endpoint_id AND q.ordering_key = f.ordering_key AND q.state = 'held'
                ORDER BY q.sequence LIMIT 1) AS delivery_id
        FROM free f
      ),
      released AS (
        UPDATE delivery_queue q SET state = ${initialState(tx, tx`q.endpoint_id`)}, next_attempt_at = now()
        FROM heads h WHERE q.delivery_id = h.delivery_id AND q.state = 'held'
        RETURNING q.delivery_id
      )
      -- wake every dispatcher at commit (only when a head became scheduled or parked)
      SELECT count(*)::int AS n,
        ${wakeDispatchersIfAny(tx, tx`released`)} AS woken
      FROM released`;
    const [, [row]] = await Promise.all([lock, release]);
    return row?.n ?? 0;
  };
  // A pool starts its own short transaction; inside a transaction, the statements join it.
  if ('begin' in sql) return (sql as Sql).begin((tx) => run(tx));
  return run(sql);
}

/**
 * The safety net (maintenance): a settle whose process died between writing the result and
 * releasing the next head leaves its key with held rows and no head. Walks up to `limit` keys
 * that have held rows, starting after `after` (a loose index scan of delivery_queue_held_idx,
 * one descent per key), and releases the heads of those without one. Returns the released count
 * and where to continue (null: the walk reached the end; start again from the beginning).
 */
export async function unholdStrandedHeads(
  sql: Sql,
  after: OrderingKey | null,
  limit = 500,
): Promise<{ released: number; next: OrderingKey | null }> {
  const rows = await sql<{ endpoint_id: string; ordering_key: string; stranded: boolean }[]>`
    WITH RECURSIVE walk AS (
      (SELECT q.endpoint_id, q.ordering_key, 1 AS n FROM delivery_queue q
       WHERE q.state = 'held' AND (q.endpoint_id, q.ordering_key) > (${after?.endpointId ?? ''}, ${after?.orderingKey ?? ''})
       ORDER BY q.endpoint_id, q.ordering_key LIMIT 1)
      UNION ALL
      SELECT nx.endpoint_id, nx.ordering_key, w.n + 1 FROM walk w CROSS JOIN LATERAL (
        SELECT q.endpoint_id, q.ordering_key FROM delivery_queue q
        WHERE q.state = 'held' AND (q.endpoint_id, q.ordering_key) > (w.endpoint_id, w.ordering_key)
        ORDER BY q.endpoint_id, q.ordering_key LIMIT 1) nx
      WHERE w.n < ${limit}
    )
    SELECT w.endpoint_id, w.ordering_key,
      NOT EXISTS (SELECT 1 FROM delivery_queue q
                  WHERE q.endpoint_id = w.endpoint_id AND q.ordering_key = w.ordering_key AND q.state <> 'held') AS stranded
    FROM walk w ORDER BY w.n`;
  const stranded = rows
    .filter((r) => r.stranded)
    .map((r) => ({ endpointId: r.endpoint_id, orderingKey: r.ordering_key }));
  const released = await unholdHeads(sql, stranded);
  const last = rows.at(-1);
  const next =
    rows.length < limit || !last ? null : { endpointId: last.endpoint_id, orderingKey: last.ordering_key };
  return { released, next };
}

/**
 * The enqueue's CTEs that number a batch's keyed deliveries (over its `targets` and `input`),
 * ending in `numbered`: the targets a content filter let through (`passes`, deliveries/fan-out.ts)
 * with their ids and sequence numbers. Each (endpoint, key) of
 * the batch takes its count of numbers in one upsert, whose row lock also serialises this key's
 * enqueues and head releases until commit; sorted, so concurrent batches lock keys in one order.
 */
export function numberedByKey(tx: Executor): Fragment {
  return tx`
      key_counts AS (
        SELECT endpoint_id, ordering_key, count(*) AS n FROM targets WHERE ordering_key IS NOT NULL AND passes
        GROUP BY endpoint_id, ordering_key
      ),
      numbers AS (
        INSERT INTO ordering_keys (endpoint_id, ordering_key, last_sequence)
        SELECT endpoint_id, ordering_key, n FROM key_counts ORDER BY endpoint_id, ordering_key
        ON CONFLICT (endpoint_id, ordering_key) DO UPDATE SET last_sequence = ordering_keys.last_sequence + excluded.last_sequence
        RETURNING endpoint_id, ordering_key, last_sequence
      ),
      numbered AS (
        SELECT coalesce(t.id, i.delivery_id) AS id, t.message_id, t.endpoint_id, t.ordering_key,
          n.last_sequence - count(*) OVER w + row_number() OVER (w ORDER BY i.ord) AS sequence
        FROM targets t JOIN input i ON i.id = t.message_id
        LEFT JOIN numbers n ON n.endpoint_id = t.endpoint_id AND n.ordering_key = t.ordering_key
        WHERE t.passes
        WINDOW w AS (PARTITION BY t.endpoint_id, t.ordering_key)
      ),`;
}

/** The ordering keys of rows that left the queue (`key_endpoint_id` null for the others). */
export function settledKeys(
  rows: { key_endpoint_id: string | null; ordering_key: string | null }[],
): OrderingKey[] {
  const keys: OrderingKey[] = [];
  for (const r of rows) {
    if (r.key_endpoint_id !== null && r.ordering_key !== null) {
      keys.push({ endpointId: r.key_endpoint_id, orderingKey: r.ordering_key });
    }
  }
  return keys;
}
