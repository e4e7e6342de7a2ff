/** /v1/deliveries: enqueue (single, fan-out, batch), read one, list. */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import type { BacklogGuard } from '../deliveries/backlog.js';
import { enqueue } from '../deliveries/enqueue.js';
import { EnqueueError, type EnqueueItem, type EnqueueResult } from '../deliveries/enqueue-types.js';
import { DELIVERY_STATUSES, type DeliveryRow, getDelivery, listDeliveries } from '../deliveries/read.js';
import { listReplaysOf } from '../deliveries/replay.js';
import type { WakeUps } from '../deliveries/wakeup.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { firstMismatch, type SchemaCatalog } from '../tenants/event-types.js';
import { takeTokens } from '../tenants/rate-limit.js';
import { type Caller, narrowScope, TENANT_ID } from '../tenants/scope.js';
import { arrayElementSpans, jsonSyntaxErrorAt, objectMemberSpans, type Span } from '../util/raw-json.js';
import { type ApiEnv, callerOf } from './auth.js';
import { type JsonBody, readJsonBody, validate } from './body.js';
import { callerError, HttpError, notFound } from './errors.js';
import { pageCursor, pageLimit } from './pagination.js';
import { tenantForWrite } from './tenant-arg.js';
import { MAX_PAYLOAD_DEPTH } from './validation.js';

export const MAX_BATCH_ITEMS = 1000;
/** Room for the envelope around the largest payload in a single-delivery request. */
const ENVELOPE_BYTES = 64 * 1024;

const idString = z.string().min(1).max(255);
export const itemSchema = z.strictObject({
  tenant_id: z.string().regex(TENANT_ID, 'must be 1-128 of A-Za-z0-9._:-').optional(),
  endpoint_id: idString.optional(),
  event_type: z.string().min(1).max(256),
  payload: z.custom<unknown>((v) => v !== undefined, { message: 'is required' }),
  event_id: idString.optional(),
  ordering_key: idString.optional(),
});
export const batchItemSchema = itemSchema.extend({ idempotency_key: idString.optional() });
export const batchSchema = z.strictObject({ items: z.array(z.unknown()).min(1).max(MAX_BATCH_ITEMS) });

export interface DeliveryRoutesDeps {
  sql: Sql;
  maxPayloadBytes: number;
  maxBatchBytes: number;
  backlogLimit: number;
  backlog: BacklogGuard;
  waker: WakeUps;
  metrics: HookpostMetrics;
  /** Event-type schemas that payloads are validated against. */
  catalog: SchemaCatalog;
}

/** An item ready to enqueue, with its parsed payload for schema validation. */
interface ParsedItem {
  item: EnqueueItem;
  payload: unknown;
}

export function deliveryJson(row: DeliveryRow) {
  return { ...row };
}

function resultJson(result: EnqueueResult) {
  return {
    message_id: result.messageId,
    duplicate: result.duplicate,
    deliveries: result.deliveries.map((d) => ({ id: d.id, endpoint_id: d.endpointId, status: d.status })),
  };
}

const isoTime = z.iso.datetime({ offset: true });

/** An ISO 8601 query parameter with a zone (`since`, `until`), or a 400 naming it. */
function timeQuery(c: Context, name: string): string | undefined {
  const raw = c.req.query(name);
  if (raw === undefined) return undefined;
  if (!isoTime.safeParse(raw).success) {
    throw new HttpError(400, 'validation_failed', `${name}: must be an ISO 8601 timestamp with a zone`);
  }
  return raw;
}

function idempotencyHeader(c: Context): string | null {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return null;
  if (key.length === 0 || key.length > 255) {
    throw new HttpError(400, 'validation_failed', 'Idempotency-Key: must be 1 to 255 characters');
  }
  return key;
}

/** Validates one item and cuts its payload out of the request text, byte for byte. */
function toItem(
  caller: Caller,
  { text, asciiBytes }: Pick<JsonBody, 'text' | 'asciiBytes'>,
  value: unknown,
  span: Span,
  maxPayloadBytes: number,
  idempotencyKey: string | null,
  path: (string | number)[],
  batch: boolean,
): ParsedItem {
  const item = validate(batch ? batchItemSchema : itemSchema, value, path);
  const tenantId = tenantForWrite(caller, item.tenant_id) ?? null;
  const payloadSpan = objectMemberSpans(text, span.start).get('payload')!;
  if (payloadSpan.depth > MAX_PAYLOAD_DEPTH) {
    // Deeper JSON cannot be rendered back (JSON.stringify recurses) and no receiver needs it.
    const field = [...path, 'payload'].join('.');
    const message = `is nested ${payloadSpan.depth} levels deep; at most ${MAX_PAYLOAD_DEPTH} are accepted`;
    throw new HttpError(400, 'validation_failed', `${field}: ${message}`, [{ field, message }]);
  }
  // A view of the body's bytes when they are ASCII (offsets agree); else the span re-encoded.
  const payload = asciiBytes
    ? asciiBytes.subarray(payloadSpan.start, payloadSpan.end)
    : Buffer.from(text.slice(payloadSpan.start, payloadSpan.end), 'utf8');
  if (payload.length > maxPayloadBytes) {
    throw new HttpError(
      413,
      'payload_too_large',
      `${[...path, 'payload'].join('.')}: ${payload.length} bytes is over the ${maxPayloadBytes}-byte limit`,
      batch ? { index: path[1] } : undefined,
    );
  }
  return {
    item: {
      tenantId,
      endpointId: item.endpoint_id ?? null,
      eventType: item.event_type,
      eventId: item.event_id ?? null,
      orderingKey: item.ordering_key ?? null,
      idempotencyKey:
        ('idempotency_key' in item ? (item.idempotency_key as string | undefined) : undefined) ??
        idempotencyKey,
      payload,
    },
    payload: item.payload,
  };
}

/**
 * The response text with the payload spliced in as stored, never re-serialised: the bytes are the
 * caller's exact JSON (they passed JSON.parse at enqueue), and JSON.stringify of a parsed copy
 * would overflow the stack on a deeply nested payload stored before depth was bounded. An erased
 * or unreadable payload shows as null.
 */
function withRawPayload(body: Record<string, unknown>, payload: Buffer | null): string {
  const text = payload?.toString('utf8') ?? '';
  const raw = text.trim() !== '' && jsonSyntaxErrorAt(text) === -1 ? text.trim() : 'null';
  const rest = JSON.stringify(body);
  return rest === '{}' ? `{"payload":${raw}}` : `${rest.slice(0, -1)},"payload":${raw}}`;
}

/**
 * Counts refused enqueue requests by their error code (a fixed set in this code base, so the
 * label stays bounded). Hono has already turned the error into the response here; c.error
 * keeps what was thrown.
 */
function countRejections(metrics: HookpostMetrics): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (c.req.method !== 'POST' || !c.error) return;
    metrics.enqueueRejected.inc({ reason: callerError(c.error)?.code ?? 'internal_error' });
  };
}

export function deliveryRoutes(deps: DeliveryRoutesDeps) {
  const app = new Hono<ApiEnv>();
  app.use('/', countRejections(deps.metrics));
  app.use('/batch', countRejections(deps.metrics));

  async function checkBacklog() {
    const due = await deps.backlog.dueCount();
    if (due > deps.backlogLimit) {
      throw new HttpError(
        503,
        'backlog_full',
        `more than ${deps.backlogLimit} deliveries are waiting; try again later`,
        undefined,
        {
          'retry-after': '5',
        },
      );
    }
  }

  /**
   * Payloads of event types with a schema must match it. The first mismatch rejects the request
   * (a batch as a whole) with the JSON pointer of the failing part; the value is never quoted.
   */
  async function checkSchemas(parsed: ParsedItem[], batch: boolean) {
    const validators = await deps.catalog.validatorsFor(parsed.map((p) => p.item.eventType));
    if (validators.size === 0) return;
    for (const [index, { item, payload }] of parsed.entries()) {
      const check = validators.get(item.eventType);
      if (!check || check(payload)) continue;
      const m = firstMismatch(item.eventType, check);
      const where = batch ? `items[${index}].payload` : 'payload';
      throw new HttpError(
        400,
        'schema_mismatch',
        `${where}${m.pointer}: ${m.message} (event type ${item.eventType})`,
        { ...(batch ? { index } : {}), pointer: m.pointer, keyword: m.keyword, event_type: item.eventType },
      );
    }
  }

  /** The key's own enqueue rate, shared by every API process (src/tenants/rate-limit.ts). */
  async function checkRate(caller: Caller, count: number) {
    const rate = caller.rateLimitPerSecond;
    if (rate === null) return;
    if (count > rate) {
      throw new HttpError(
        400,
        'batch_over_rate_limit',
        `${count} items in one request is more than this key's limit of ${rate} per second: send smaller batches`,
      );
    }
    const decision = await takeTokens(deps.sql, caller.keyId, rate, count);
    if (!decision.granted) {
      throw new HttpError(
        429,
        'rate_limited',
        `this key may enqueue ${rate} items per second`,
        { limit_per_second: rate },
        { 'retry-after': String(decision.retryAfterSeconds) },
      );
    }
  }

  /**
   * The items to enqueue, once their payloads passed their event types' schemas. Only this
   * returns: the parsed payload trees (and the request's text) become garbage before the
   * enqueue's round trips. Kept reachable across those awaits, every tree of a 1,000-item batch
   * was copied by each young-generation collection that ran meanwhile (docs/performance.md,
   * "Garbage").
   */
  async function checkedItems(parsed: ParsedItem[], batch: boolean): Promise<EnqueueItem[]> {
    await checkSchemas(parsed, batch);
    return parsed.map((p) => p.item);
  }

  async function run(caller: Caller, items: EnqueueItem[], batch: boolean) {
    await checkRate(caller, items.length);
    try {
      const results = await enqueue(deps.sql, caller, items, { waker: deps.waker });
      let queued = 0;
      for (const r of results) if (!r.duplicate) queued += r.deliveries.length;
      if (queued > 0) deps.metrics.deliveriesEnqueued.inc(queued);
      return results;
    } catch (error) {
      if (!(error instanceof EnqueueError)) throw error;
      const details = batch ? { index: error.index } : undefined;
      if (error.kind === 'endpoint_not_found')
        throw new HttpError(404, 'endpoint_not_found', error.message, details);
      throw new HttpError(409, 'idempotency_conflict', error.message, details);
    }
  }

  /** The single enqueue's body, validated and cut (the payload span is the body's own bytes). */
  async function parseSingle(c: Context, key: string | null): Promise<ParsedItem> {
    const body = await readJsonBody(
      c,
      deps.maxPayloadBytes + ENVELOPE_BYTES,
      `payload: over the ${deps.maxPayloadBytes}-byte limit (HOOKPOST_MAX_PAYLOAD_BYTES)`,
    );
    const span = { start: body.text.search(/\S/), end: body.text.length, depth: 0 };
    return toItem(callerOf(c), body, body.value, span, deps.maxPayloadBytes, key, [], false);
  }

  /** A batch's body, validated item by item and cut into payload spans. */
  async function parseBatch(c: Context, key: string | null): Promise<ParsedItem[]> {
    const raw = await readJsonBody(c, deps.maxBatchBytes);
    const body = validate(batchSchema, raw.value);
    const itemsSpan = objectMemberSpans(raw.text).get('items')!;
    const spans = arrayElementSpans(raw.text, itemsSpan.start);
    // A batch-level Idempotency-Key gives each item the key "<key>:<index>", so retrying the
    // same batch returns the same ids.
    const caller = callerOf(c);
    return body.items.map((item, index) =>
      toItem(
        caller,
        raw,
        item,
        spans[index]!,
        deps.maxPayloadBytes,
        key === null ? null : `${key}:${index}`,
        ['items', index],
        true,
      ),
    );
  }

  app.post('/', async (c) => {
    const key = idempotencyHeader(c);
    const parsed = [await parseSingle(c, key)];
    await checkBacklog();
    const [result] = await run(callerOf(c), await checkedItems(parsed.splice(0), false), false);
    return c.json(resultJson(result!), result!.duplicate ? 200 : 202);
  });

  app.post('/batch', async (c) => {
    const key = idempotencyHeader(c);
    const parsed = await parseBatch(c, key);
    await checkBacklog();
    // splice(0): hands the parsed items over, so this frame keeps no reference to their trees.
    const results = await run(callerOf(c), await checkedItems(parsed.splice(0), true), true);
    const allDuplicates = results.every((r) => r.duplicate);
    return c.json({ results: results.map(resultJson) }, allDuplicates ? 200 : 202);
  });

  app.get('/', async (c) => {
    const status = c.req.query('status');
    if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status)) {
      throw new HttpError(400, 'validation_failed', `status: must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const limit = pageLimit(c.req.query('limit'));
    const since = timeQuery(c, 'since');
    const until = timeQuery(c, 'until');
    const scope = narrowScope(callerOf(c), c.req.query('tenant_id'));
    if (!scope) return c.json({ data: [], next_cursor: null });
    const rows = await listDeliveries(deps.sql, scope, {
      status: status as DeliveryRow['status'] | undefined,
      endpointId: c.req.query('endpoint_id'),
      eventType: c.req.query('event_type'),
      messageId: c.req.query('message_id'),
      since,
      until,
      cursor: pageCursor(c.req.query('cursor'), 'dlv_'),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    return c.json({
      data: page.map(deliveryJson),
      next_cursor: rows.length > limit ? page.at(-1)!.id : null,
    });
  });

  app.get('/:id', async (c) => {
    const found = await getDelivery(deps.sql, callerOf(c), c.req.param('id'));
    if (!found) notFound('delivery', c.req.param('id'));
    // Each replay restarts attempt numbering; `replays` shows where each round began.
    const replays = await listReplaysOf(deps.sql, found.delivery.id);
    const body = { ...deliveryJson(found.delivery), attempts: found.attempts, replays };
    return c.body(withRawPayload(body, found.payload), 200, { 'content-type': 'application/json' });
  });

  return app;
}
