/**
 * Idempotency of the enqueue: which items can be recognised as a repeat (an Idempotency-Key or an
 * event_id), the request hash that tells "same request" from "same key, different body", and
 * the lookup of the messages an insert skipped. The unique indexes themselves do the
 * deduplication (sql/0001_init.sql, INSERT … ON CONFLICT DO NOTHING in enqueue.ts).
 */
import { createHash } from 'node:crypto';
import type { Executor } from '../db/connect.js';
import { EnqueueError, type EnqueueItem, type EnqueueResult } from './enqueue-types.js';

/** Whether a later request can be recognised as a duplicate of this item. */
export function hasKey(item: EnqueueItem): boolean {
  return item.idempotencyKey !== null || item.eventId !== null;
}

/** The request_hash of a message without a key: nothing is ever compared with it. */
const NO_HASH = Buffer.alloc(0);

/** SHA-256 over everything that defines the request, so "same key, same body" is one comparison. */
export function requestHash(item: EnqueueItem): Buffer {
  const head = JSON.stringify([item.endpointId, item.eventType, item.eventId, item.orderingKey]);
  return createHash('sha256').update(head).update('\n').update(item.payload).digest();
}

/** The request_hash stored for an item: its SHA-256 when it has a key, else the empty NO_HASH. */
export function requestHashOf(item: EnqueueItem): Buffer {
  return hasKey(item) ? requestHash(item) : NO_HASH;
}

interface ExistingRow {
  id: string;
  idempotency_key: string | null;
  event_id: string | null;
  request_hash: Buffer;
  deliveries: { id: string; endpoint_id: string; status: string }[];
}

/**
 * For items the insert skipped: finds the message that holds their key (committed by now,
 * since ON CONFLICT waited for it), and either returns its ids or, when the request differs,
 * throws so the whole transaction rolls back.
 */
export async function resolveDuplicates(
  tx: Executor,
  tenants: string[],
  items: EnqueueItem[],
  hashes: Buffer[],
  skipped: number[],
  ids: string[],
): Promise<Map<number, EnqueueResult>> {
  // Keys are unique per tenant: look each skipped item up under its own tenant.
  const rows = await tx<(ExistingRow & { tenant_id: string })[]>`
    SELECT m.id, m.tenant_id, m.idempotency_key, m.event_id, m.request_hash,
      coalesce((SELECT json_agg(json_build_object('id', d.id, 'endpoint_id', d.endpoint_id, 'status', d.status) ORDER BY d.id)
                FROM deliveries d WHERE d.message_id = m.id), '[]') AS deliveries
    FROM messages m
    JOIN unnest(${skipped.map((i) => tenants[i]!)}::text[], ${skipped.map((i) => items[i]!.idempotencyKey)}::text[],
                ${skipped.map((i) => items[i]!.eventId)}::text[]) AS k(tenant_id, idempotency_key, event_id)
      ON m.tenant_id = k.tenant_id AND (m.idempotency_key = k.idempotency_key OR m.event_id = k.event_id)`;
  const byKey = new Map(
    rows.filter((r) => r.idempotency_key).map((r) => [`${r.tenant_id}/${r.idempotency_key}`, r]),
  );
  const byEventId = new Map(rows.filter((r) => r.event_id).map((r) => [`${r.tenant_id}/${r.event_id}`, r]));
  const found = new Map<number, EnqueueResult>();
  for (const index of skipped) {
    const item = items[index]!;
    const tenant = tenants[index]!;
    const existing =
      (item.idempotencyKey ? byKey.get(`${tenant}/${item.idempotencyKey}`) : undefined) ??
      (item.eventId ? byEventId.get(`${tenant}/${item.eventId}`) : undefined);
    if (!existing) {
      // Only possible if the message id itself collided (80 random bits): treat as a server fault.
      throw new Error(`message ${ids[index]} was neither inserted nor found`);
    }
    if (!existing.request_hash.equals(hashes[index]!)) {
      const what =
        item.idempotencyKey && byKey.has(`${tenant}/${item.idempotencyKey}`) ? 'Idempotency-Key' : 'event_id';
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
      filtered: [],
    });
  }
  return found;
}
