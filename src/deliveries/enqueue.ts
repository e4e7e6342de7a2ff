/**
 * Enqueue: turns accepted events into messages and deliveries in one transaction, with
 * idempotency enforced by unique indexes (see sql/0001_init.sql), never by read-then-write.
 */
import { createHash } from 'node:crypto';
import type { Executor, Sql } from '../db/connect.js';
import { newId } from '../ids.js';
import { initialAt } from './queue-state.js';

export interface EnqueueItem {
  endpointId: string | null;
  eventType: string;
  eventId: string | null;
  orderingKey: string | null;
  idempotencyKey: string | null;
  payload: Buffer;
}

export interface EnqueuedDelivery {
  id: string;
  endpointId: string;
  status: string;
}

export interface EnqueueResult {
  messageId: string;
  /** True when an earlier request with the same key or event id already created this message. */
  duplicate: boolean;
  deliveries: EnqueuedDelivery[];
}

/** Why a request cannot be enqueued; `index` is the offending item in a batch. */
export class EnqueueError extends Error {
  constructor(
    readonly kind: 'endpoint_not_found' | 'idempotency_conflict',
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}

/** SHA-256 over everything that defines the request, so "same key, same body" is one comparison. */
export function requestHash(item: EnqueueItem): Buffer {
  const head = JSON.stringify([item.endpointId, item.eventType, item.eventId, item.orderingKey]);
  return createHash('sha256').update(head).update('\n').update(item.payload).digest();
}

/**
 * All payloads as one bytea parameter plus offsets: postgres.js sends a Buffer as one native hex
 * conversion, while a bytea[] is escaped element by element with regular expressions, which
 * was a visible share of enqueue CPU for 1000 x 1 KB batches.
 */
function packPayloads(payloads: Buffer[]): { bytes: Buffer; offsets: number[]; lengths: number[] } {
  const offsets: number[] = [];
  let offset = 0;
  for (const p of payloads) {
    offsets.push(offset);
    offset += p.length;
  }
  return { bytes: Buffer.concat(payloads), offsets, lengths: payloads.map((p) => p.length) };
}

/** PostgreSQL type oid of bytea, for postgres.js array parameters. */
const BYTEA = 17;

interface CreatedRow {
  message_id: string;
  delivery_id: string | null;
  endpoint_id: string | null;
  status: string | null;
}

interface ExistingRow {
  id: string;
  idempotency_key: string | null;
  event_id: string | null;
  request_hash: Buffer;
  deliveries: { id: string; endpoint_id: string; status: string }[];
}

/**
 * Writes all items atomically: either every item is queued (or recognised as a duplicate) or
 * nothing is written. Resolves only after COMMIT, so a 2xx means the rows are on disk.
 */
export async function enqueue(sql: Sql, producer: string, items: EnqueueItem[]): Promise<EnqueueResult[]> {
  await assertEndpointsExist(sql, items);
  const ids = items.map(() => newId('msg_'));
  const hashes = items.map(requestHash);
  const packed = packPayloads(items.map((i) => i.payload));
  return sql.begin(async (tx) => {
    // One statement for the whole batch: messages, then their deliveries (one per target
    // endpoint, fan-out by event type when endpoint_id is absent). ON CONFLICT DO NOTHING
    // skips duplicates of an earlier request; a racing twin waits on the unique index.
    const created = await tx<CreatedRow[]>`
      WITH input AS (
        SELECT t.*, substring(${packed.bytes}::bytea FROM t.payload_offset + 1 FOR t.payload_length) AS payload
        FROM unnest(
          ${ids}::text[], ${items.map((i) => i.eventType)}::text[], ${items.map((i) => i.eventId)}::text[],
          ${items.map((i) => i.idempotencyKey)}::text[], ${items.map((i) => i.orderingKey)}::text[],
          ${items.map((i) => i.endpointId)}::text[], ${tx.array(hashes, BYTEA)}::bytea[],
          ${packed.offsets}::int[], ${packed.lengths}::int[]
        ) AS t(id, event_type, event_id, idempotency_key, ordering_key, endpoint_id, request_hash,
               payload_offset, payload_length)
      ),
      inserted AS (
        INSERT INTO messages (id, producer, event_type, event_id, idempotency_key, ordering_key, endpoint_id,
                              request_hash, payload)
        SELECT id, ${producer}, event_type, event_id, idempotency_key, ordering_key, endpoint_id, request_hash, payload
        FROM input
        ON CONFLICT DO NOTHING
        RETURNING id, event_type, endpoint_id
      ),
      targets AS (
        SELECT hookpost_id('dlv_') AS id, t.* FROM (
          SELECT i.id AS message_id, e.id AS endpoint_id, e.enabled FROM inserted i JOIN endpoints e
            ON e.id = i.endpoint_id
          UNION ALL
          SELECT i.id, e.id, true FROM inserted i JOIN endpoints e
            ON e.deleted_at IS NULL AND e.enabled AND e.event_types @> ARRAY[i.event_type]
          WHERE i.endpoint_id IS NULL
          UNION ALL
          SELECT i.id, e.id, true FROM inserted i JOIN endpoints e
            ON e.deleted_at IS NULL AND e.enabled AND e.event_types = '{}'
          WHERE i.endpoint_id IS NULL
        ) t
      ),
      created AS (
        INSERT INTO deliveries (id, message_id, endpoint_id)
        SELECT id, message_id, endpoint_id FROM targets
        RETURNING id, message_id, endpoint_id, status
      ),
      -- Due now, or parked when the endpoint is disabled or its circuit open (queue-state.ts).
      queued AS (
        INSERT INTO delivery_queue (delivery_id, endpoint_id, message_id, next_attempt_at)
        SELECT t.id, t.endpoint_id, t.message_id, ${initialAt(tx, tx`t.endpoint_id`, tx`now()`)} FROM targets t
      )
      SELECT i.id AS message_id, c.id AS delivery_id, c.endpoint_id, c.status
      FROM inserted i LEFT JOIN created c ON c.message_id = i.id`;

    const results = new Map<string, EnqueueResult>();
    for (const row of created) {
      let result = results.get(row.message_id);
      if (!result) {
        result = { messageId: row.message_id, duplicate: false, deliveries: [] };
        results.set(row.message_id, result);
      }
      if (row.delivery_id && row.endpoint_id && row.status) {
        result.deliveries.push({ id: row.delivery_id, endpointId: row.endpoint_id, status: row.status });
      }
    }
    const skipped = items.map((_, index) => index).filter((index) => !results.has(ids[index]!));
    const duplicates =
      skipped.length > 0 ? await resolveDuplicates(tx, producer, items, hashes, skipped, ids) : new Map();
    return ids.map((id, index) => results.get(id) ?? duplicates.get(index)!);
  });
}

/**
 * For items the insert skipped: finds the message that holds their key (committed by now,
 * since ON CONFLICT waited for it), and either returns its ids or, when the request differs,
 * throws so the whole transaction rolls back.
 */
async function resolveDuplicates(
  tx: Executor,
  producer: string,
  items: EnqueueItem[],
  hashes: Buffer[],
  skipped: number[],
  ids: string[],
): Promise<Map<number, EnqueueResult>> {
  const keys = skipped.map((i) => items[i]!.idempotencyKey).filter((k): k is string => k !== null);
  const eventIds = skipped.map((i) => items[i]!.eventId).filter((k): k is string => k !== null);
  const rows = await tx<ExistingRow[]>`
    SELECT m.id, m.idempotency_key, m.event_id, m.request_hash,
      coalesce((SELECT json_agg(json_build_object('id', d.id, 'endpoint_id', d.endpoint_id, 'status', d.status) ORDER BY d.id)
                FROM deliveries d WHERE d.message_id = m.id), '[]') AS deliveries
    FROM messages m
    WHERE m.producer = ${producer}
      AND (m.idempotency_key = ANY(${keys}::text[]) OR m.event_id = ANY(${eventIds}::text[]))`;
  const byKey = new Map(rows.filter((r) => r.idempotency_key).map((r) => [r.idempotency_key!, r]));
  const byEventId = new Map(rows.filter((r) => r.event_id).map((r) => [r.event_id!, r]));
  const found = new Map<number, EnqueueResult>();
  for (const index of skipped) {
    const item = items[index]!;
    const existing =
      (item.idempotencyKey ? byKey.get(item.idempotencyKey) : undefined) ??
      (item.eventId ? byEventId.get(item.eventId) : undefined);
    if (!existing) {
      // Only possible if the message id itself collided (80 random bits): treat as a server fault.
      throw new Error(`message ${ids[index]} was neither inserted nor found`);
    }
    if (!existing.request_hash.equals(hashes[index]!)) {
      const what = item.idempotencyKey && byKey.has(item.idempotencyKey) ? 'Idempotency-Key' : 'event_id';
      throw new EnqueueError(
        'idempotency_conflict',
        index,
        `${what} was already used for a different request (message ${existing.id})`,
      );
    }
    found.set(index, {
      messageId: existing.id,
      duplicate: true,
      deliveries: existing.deliveries.map((d) => ({ id: d.id, endpointId: d.endpoint_id, status: d.status })),
    });
  }
  return found;
}

/** An explicit endpoint_id must name an existing endpoint (disabled ones still queue and wait). */
async function assertEndpointsExist(sql: Sql, items: EnqueueItem[]): Promise<void> {
  const wanted = [...new Set(items.map((i) => i.endpointId).filter((id): id is string => id !== null))];
  if (wanted.length === 0) return;
  const rows = await sql<{ id: string }[]>`
    SELECT id FROM endpoints WHERE id = ANY(${wanted}::text[]) AND deleted_at IS NULL`;
  const present = new Set(rows.map((r) => r.id));
  const index = items.findIndex((i) => i.endpointId !== null && !present.has(i.endpointId));
  if (index >= 0) {
    throw new EnqueueError('endpoint_not_found', index, `endpoint ${items[index]!.endpointId} not found`);
  }
}
