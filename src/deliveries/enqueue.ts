/**
 * Enqueue: turns accepted events into messages and deliveries in one transaction, with
 * idempotency enforced by unique indexes (see sql/0001_init.sql), never by read-then-write.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import type { Executor, Fragment, Sql } from '../db/connect.js';
import { utf8Server } from '../db/encoding.js';
import { filterableText } from '../filters/payload-text.js';
import { newIds } from '../ids.js';
import { numberedByKey, type OrderingKey, unholdHeads } from '../queue/ordering.js';
import { type WakeUps, wakeDispatchersAtCommit } from '../queue/wakeup.js';
import { DEFAULT_TENANT, type TenantScope, tenantIs } from '../tenants/scope.js';
import { deletedTenants } from '../tenants/tenants.js';
import { EnqueueError, type EnqueueItem, type EnqueueResult, type Producer } from './enqueue-types.js';
import {
  filterDocument,
  filteringTenants,
  insertDeliveries,
  passesFilter,
  subscribedEndpoint,
} from './fan-out.js';
import { hasKey, requestHashOf, resolveDuplicates } from './idempotency.js';

/**
 * All payloads as one bytea parameter plus offsets: postgres.js sends a Buffer as one native hex
 * conversion, while a bytea[] is escaped element by element with regular expressions, which
 * was a visible share of enqueue CPU for 1000 x 1 KB batches. Payloads the API cut out of one
 * request body are views of its bytes: then the stretch of the body that holds them is sent as
 * it is (a little more than the payloads: the envelopes between them), with no copy.
 */
function packPayloads(payloads: Buffer[]): { bytes: Buffer; offsets: number[]; lengths: number[] } {
  const lengths = payloads.map((p) => p.length);
  const shared = sharedRegion(payloads);
  if (shared)
    return { bytes: shared, offsets: payloads.map((p) => p.byteOffset - shared.byteOffset), lengths };
  const offsets: number[] = [];
  let offset = 0;
  for (const length of lengths) {
    offsets.push(offset);
    offset += length;
  }
  return { bytes: Buffer.concat(payloads, offset), offsets, lengths };
}

/**
 * The region of one underlying buffer that spans every payload, when they all are views of the
 * same one and the region is mostly payload (at most twice their size plus 64 KB). Small Buffers
 * of unrelated origin can share node's allocation pool, so the bytes between payloads might not
 * be JSON: the region is used only when it is UTF-8 without NUL, as packedBytes requires.
 */
function sharedRegion(payloads: Buffer[]): Buffer | undefined {
  const first = payloads[0];
  if (!first) return undefined;
  let start = first.byteOffset;
  let end = start + first.length;
  let total = 0;
  for (const p of payloads) {
    if (p.buffer !== first.buffer) return undefined;
    start = Math.min(start, p.byteOffset);
    end = Math.max(end, p.byteOffset + p.length);
    total += p.length;
  }
  if (end - start > 2 * total + 65_536) return undefined;
  const region = Buffer.from(first.buffer, start, end - start);
  return isUtf8(region) && !region.includes(0) ? region : undefined;
}

/**
 * The packed payloads as a bytea expression. On a UTF-8 server they go as one text parameter,
 * converted once in a materialised CTE (per row it would convert the whole batch per row): half
 * the wire bytes of the hex form, and no hex encoding in JavaScript. The claim then reads them
 * back as text too (claim.ts), which needs every stored payload to be UTF-8 without NUL: true of
 * every payload the API accepts (JSON text cut out of a body decoded as strict UTF-8), and
 * checked here, at the one place payloads are written, so nothing else can slip in. (The check
 * covers the whole packed region, envelopes between payloads included: JSON text as well.)
 */
function packedBytes(tx: Executor, sql: Sql, bytes: Buffer): Fragment {
  if (!utf8Server(sql)) return tx`${bytes}::bytea`;
  // ASCII (the usual JSON) reads as Latin-1 by a copy; the UTF-8 decoder costs ~5× as much.
  const ascii = isAscii(bytes);
  if ((!ascii && !isUtf8(bytes)) || bytes.includes(0))
    throw new Error('a payload is not UTF-8 text without NUL');
  return tx`convert_to(${bytes.toString(ascii ? 'latin1' : 'utf8')}::text, 'UTF8')`;
}

/** PostgreSQL type oid of bytea, for postgres.js array parameters. */
const BYTEA = 17;

interface CreatedRow {
  message_id: string;
  delivery_id: string | null;
  endpoint_id: string | null;
  /** A delivery's status, or FILTERED for an endpoint whose filter the message did not pass. */
  status: string | null;
}

/** The result rows' mark of a candidate endpoint a filter kept the message from. */
const FILTERED = 'filtered';

export interface EnqueueOptions {
  /**
   * Wakes the dispatchers for what this enqueue queued: with a NOTIFY inside the transaction
   * when one is due at once (Waker.takeForCommit), else a debounced one after the commit.
   */
  waker?: WakeUps;
  /**
   * Deliver whatever the endpoints' content filters say (the signed test event of
   * POST /v1/endpoints/{id}/test-event, which is sent whatever the endpoint subscribes to).
   */
  ignoreFilters?: boolean;
  /**
   * The W3C traceparent stored with every message (tracing on: the enqueue request's span); the
   * attempts continue that trace. Without it the statement does not name the column at all.
   */
  traceparent?: string | undefined;
}

/**
 * Writes all items atomically: either every item is queued (or recognised as a duplicate) or
 * nothing is written. Resolves only after COMMIT, so a 2xx means the rows are on disk.
 */
export async function enqueue(
  sql: Sql,
  producer: Producer,
  items: EnqueueItem[],
  options: EnqueueOptions = {},
): Promise<EnqueueResult[]> {
  const ids = newIds('msg_', items.length);
  // An explicit endpoint gets exactly one delivery, so its id is made here (cheaper than in SQL).
  const explicitIds = newIds('dlv_', items.filter((i) => i.endpointId !== null).length);
  let nextExplicit = 0;
  const deliveryIds = items.map((i) => (i.endpointId === null ? null : explicitIds[nextExplicit++]!));
  // Without ordering keys the batch needs no sequence numbers: the statement leaves that part out.
  const keyed = items.some((i) => i.orderingKey !== null);
  // Only a key (Idempotency-Key, event_id) can make a message conflict: a fresh id cannot. Without
  // any, the insert leaves out ON CONFLICT, whose speculative insertion costs a unique-index probe
  // and a WAL record (HEAP_CONFIRM) per message; and a message without a key is never compared
  // with a later request, so it stores an empty hash instead of a SHA-256 over its payload.
  const deduplicated = items.some(hasKey);
  const hashes = items.map(requestHashOf);
  // Without keys, ordering keys or fan-out, each item makes exactly one message and one pending
  // delivery whose ids are made here (explicit endpoints are checked below, and nothing can be
  // skipped): the statement then returns how many deliveries it created instead of a row per item.
  const predictable = !deduplicated && !keyed && items.every((i) => i.endpointId !== null);
  const packed = packPayloads(items.map((i) => i.payload));
  // Tenants the request named, created on first use (a live one costs an index probe); a deleted
  // one is not brought back (only a PUT does that): the request is 404 tenant_not_found.
  const named = [...new Set(items.map((i) => i.tenantId).filter((t): t is string => t !== null))];
  const notify = options.waker?.takeForCommit() ?? false;
  const traceparent = options.traceparent;
  // Payloads jsonb cannot take as they are are filtered as a copy it can (filters/payload-text.ts).
  const unsafe = new Map<string, string>();
  if (!options.ignoreFilters)
    items.forEach((item, index) => {
      const text = filterableText(item.payload);
      if (text !== null) unsafe.set(ids[index]!, text);
    });
  // sql.begin, not a reserved connection with BEGIN pipelined: unpatched, postgres.js 3.4.9 loses
  // reserved connections when the server goes away under them (porsager/postgres#1195, #1199; both
  // patched since), and after a database restart requests hung for good; the round trip it saved
  // showed no CPU gain (docs/architecture.md, "Enqueue path"). The NOTIFY and the endpoint check
  // still travel together.
  const written = await sql.begin(async (tx) => {
    const woken = notify ? tx`SELECT ${wakeDispatchersAtCommit(tx)}`.execute() : undefined;
    woken?.catch(() => {}); // awaited below; a failure fails the statements after it as well
    // Pipelined behind the NOTIFY and read after the main statement: a deleted tenant then costs
    // the rollback of what was written, and a live one (every other request) no round trip.
    const deleted = deletedTenants(tx, named);
    deleted.catch(() => {}); // awaited below, like the NOTIFY
    const tenants = await lockExplicitEndpoints(tx, producer, items);
    // Content filters (fan-out.ts): decided per candidate endpoint on the payload as jsonb, cast
    // only for the messages of tenants that have a filtered endpoint.
    const filtering = filteringTenants(tx, options.ignoreFilters ? [] : [...new Set(tenants)]);
    const passes = options.ignoreFilters ? tx`true` : passesFilter(tx, tx`i.doc`);
    const doc = options.ignoreFilters ? tx`NULL::jsonb` : filterDocument(tx, unsafe);
    // Reported only when a filter can have applied: a one-time test, so a batch of tenants
    // without filters does not read its targets again.
    const filteredOnly = tx`NOT passes AND (SELECT cardinality(tenants) > 0 FROM filtering)`;
    // One statement for the whole batch: messages, then their deliveries (one per target
    // endpoint, fan-out by subscription when endpoint_id is absent). ON CONFLICT DO NOTHING
    // skips duplicates of an earlier request; a racing twin waits on the unique index.
    const created = await tx<(CreatedRow & { count?: number; filtered?: string[] })[]>`
      WITH ${filtering}
      packed AS MATERIALIZED (SELECT ${packedBytes(tx, sql, packed.bytes)} AS bytes),
      input AS (
        SELECT t.*, substring(packed.bytes FROM t.payload_offset + 1 FOR t.payload_length) AS payload
        FROM packed, unnest(
          ${ids}::text[], ${tenants}::text[], ${items.map((i) => i.eventType)}::text[],
          ${items.map((i) => i.eventId)}::text[],
          ${items.map((i) => i.idempotencyKey)}::text[], ${items.map((i) => i.orderingKey)}::text[],
          ${items.map((i) => i.endpointId)}::text[], ${tx.array(hashes, BYTEA)}::bytea[],
          ${packed.offsets}::int[], ${packed.lengths}::int[], ${deliveryIds}::text[]
        ) WITH ORDINALITY AS t(id, tenant_id, event_type, event_id, idempotency_key, ordering_key, endpoint_id,
               request_hash, payload_offset, payload_length, delivery_id, ord)
      ),
      -- Named tenants are created when new (a deleted one was looked up above and fails the
      -- request). Never ON CONFLICT DO UPDATE: that locks the existing row even when its WHERE is
      -- false, and would serialise every concurrent enqueue of one tenant on its row; DO NOTHING
      -- locks nothing for a live tenant.
      new_tenants AS (
        INSERT INTO tenants (id) SELECT unnest(${named}::text[]) ON CONFLICT (id) DO NOTHING
      ),
      inserted AS (
        INSERT INTO messages (id, tenant_id, producer, event_type, event_id, idempotency_key, ordering_key,
                              endpoint_id, request_hash, payload${traceparent === undefined ? tx`` : tx`, traceparent`})
        SELECT id, tenant_id, ${producer.keyId}, event_type, event_id, idempotency_key, ordering_key, endpoint_id,
               request_hash, payload${traceparent === undefined ? tx`` : tx`, ${traceparent}::text`}
        FROM input
        ${deduplicated ? tx`ON CONFLICT DO NOTHING` : tx``}
        RETURNING id, tenant_id, event_type, endpoint_id, ordering_key, ${doc} AS doc
      ),
      targets AS (
        -- Every endpoint the enqueue picks, with \`passes\`: whether its content filter let the
        -- message through (fan-out.ts); only those get deliveries, the others are reported.
        -- An explicit endpoint's delivery takes the id made for it in JavaScript (numbered, below,
        -- joins input for it there: joined here instead, the planner chose a plan that doubled the
        -- statement's time); only a fan-out, whose count is known here alone, makes its ids here.
        SELECT i.id AS message_id, e.id AS endpoint_id, i.ordering_key, NULL::text AS id, ${passes} AS passes
        FROM inserted i JOIN endpoints e
          -- Explicit endpoints were checked and share-locked above: a racing delete waits for
          -- this commit, then cancels what it finds queued (nothing is left stuck).
          ON e.id = i.endpoint_id AND e.deleted_at IS NULL
        UNION ALL
        -- Fan-out by subscription (fan-out.ts).
        SELECT i.id, e.id, i.ordering_key, CASE WHEN f.passes THEN hookpost_id('dlv_') END, f.passes
        FROM inserted i JOIN endpoints e ON ${subscribedEndpoint(tx, tx`i.tenant_id`, tx`i.event_type`)}
          CROSS JOIN LATERAL (SELECT ${passes} AS passes) f
        WHERE i.endpoint_id IS NULL
      ),
      ${
        keyed
          ? numberedByKey(tx)
          : tx`numbered AS (
        SELECT coalesce(t.id, i.delivery_id) AS id, t.message_id, t.endpoint_id, t.ordering_key, NULL::bigint AS sequence
        FROM targets t JOIN input i ON i.id = t.message_id WHERE t.passes
      ),`
      }
      -- The deliveries and their queue rows: due now, or parked when the endpoint is disabled or its
      -- circuit open; a keyed row starts held, and the unhold below makes its key's head due.
      ${insertDeliveries(tx, '', tx`numbered`)}
      ${
        predictable
          ? tx`SELECT count(*)::int AS count,
                 (SELECT coalesce(array_agg(message_id), '{}') FROM targets WHERE ${filteredOnly}) AS filtered
               FROM created`
          : tx`SELECT i.id AS message_id, c.id AS delivery_id, c.endpoint_id, c.status
               FROM inserted i LEFT JOIN created c ON c.message_id = i.id
               UNION ALL
               SELECT message_id, NULL, endpoint_id, ${FILTERED}::text FROM targets WHERE ${filteredOnly}`
      }`;

    await woken;
    const gone = await deleted;
    if (gone.length > 0) {
      const index = items.findIndex((i) => i.tenantId !== null && gone.includes(i.tenantId));
      throw new EnqueueError('tenant_not_found', index, `tenant ${gone[0]} not found`);
    }
    if (predictable) {
      const filtered = new Set(created[0]?.filtered);
      const count = created[0]?.count;
      if (count === undefined || count + filtered.size !== items.length)
        throw new Error(`enqueue created ${count} deliveries for ${items.length} items`);
      return ids.map((messageId, index) => {
        const endpointId = items[index]!.endpointId!;
        return filtered.has(messageId)
          ? { messageId, duplicate: false, deliveries: [], filtered: [endpointId] }
          : {
              messageId,
              duplicate: false,
              deliveries: [{ id: deliveryIds[index]!, endpointId, status: 'pending' }],
              filtered: [],
            };
      });
    }

    const results = new Map<string, EnqueueResult>();
    for (const row of created) {
      let result = results.get(row.message_id);
      if (!result) {
        result = { messageId: row.message_id, duplicate: false, deliveries: [], filtered: [] };
        results.set(row.message_id, result);
      }
      if (row.status === FILTERED) result.filtered.push(row.endpoint_id!);
      else if (row.delivery_id && row.endpoint_id && row.status) {
        result.deliveries.push({ id: row.delivery_id, endpointId: row.endpoint_id, status: row.status });
      }
    }
    // Second statement, fresh snapshot, key rows already locked by the upsert: unhold the heads
    // of keys that have none (a key whose head is still queued keeps waiting behind it).
    const keys: OrderingKey[] = [];
    items.forEach((item, index) => {
      const orderingKey = item.orderingKey;
      if (orderingKey === null) return;
      for (const d of results.get(ids[index]!)?.deliveries ?? [])
        keys.push({ endpointId: d.endpointId, orderingKey });
    });
    await unholdHeads(tx, keys);
    const skipped = items.map((_, index) => index).filter((index) => !results.has(ids[index]!));
    const duplicates =
      skipped.length > 0 ? await resolveDuplicates(tx, tenants, items, hashes, skipped, ids) : new Map();
    return ids.map((id, index) => results.get(id) ?? duplicates.get(index)!);
  });
  if (!notify && written.some((r) => !r.duplicate && r.deliveries.length > 0)) options.waker?.poke();
  return written;
}

/**
 * Checks the explicit endpoints inside the enqueue transaction and share-locks them: a concurrent
 * delete (an UPDATE of the row) waits for this transaction, and one that committed first is seen
 * here, so no delivery is ever queued for a deleted endpoint. An endpoint outside the caller's
 * scope, or of another tenant than the item names, is not found, exactly like an unknown id.
 * Returns each item's tenant: the one named, else the explicit endpoint's, else `default`.
 */
async function lockExplicitEndpoints(
  tx: Executor,
  scope: TenantScope,
  items: EnqueueItem[],
): Promise<string[]> {
  const wanted = [...new Set(items.map((i) => i.endpointId).filter((id): id is string => id !== null))];
  const owner = new Map<string, string>();
  if (wanted.length > 0) {
    const rows = await tx<{ id: string; tenant_id: string }[]>`
      SELECT id, tenant_id FROM endpoints
      WHERE id = ANY(${wanted}::text[]) AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'tenant_id')}
      ORDER BY id
      FOR SHARE`;
    for (const row of rows) owner.set(row.id, row.tenant_id);
  }
  return items.map((item, index) => {
    if (item.endpointId === null) return item.tenantId ?? DEFAULT_TENANT;
    const tenant = owner.get(item.endpointId);
    if (tenant === undefined || (item.tenantId !== null && item.tenantId !== tenant)) {
      throw new EnqueueError('endpoint_not_found', index, `endpoint ${item.endpointId} not found`);
    }
    return tenant;
  });
}
