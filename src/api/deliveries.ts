/** /v1/deliveries: enqueue (single, fan-out, batch), read one, list. */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import type { Sql } from '../db/connect.js';
import { enqueue } from '../deliveries/enqueue.js';
import { EnqueueError, type EnqueueItem, type EnqueueResult } from '../deliveries/enqueue-types.js';
import { DELIVERY_STATUSES, type DeliveryRow, getDelivery, listDeliveries } from '../deliveries/read.js';
import { listReplaysOf } from '../deliveries/replay.js';
import { errorFields, type Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { recordUnrouted } from '../metrics/unrouted.js';
import type { WakeUps } from '../queue/wakeup.js';
import { firstMismatch, type SchemaCatalog } from '../tenants/event-types.js';
import { type Caller, DEFAULT_TENANT, narrowScope } from '../tenants/scope.js';
import type { RequestSpan } from '../tracing/tracing.js';
import { arrayElementSpans, jsonSyntaxErrorAt, objectMemberSpans } from '../util/raw-json.js';
import type { Admission } from './admission.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { batchSchema, ENVELOPE_BYTES, idempotencyHeader, type ParsedItem, toItem } from './enqueue-items.js';
import { callerError, HttpError, notFound } from './errors.js';
import { pageCursor, pageLimit } from './pagination.js';
import { requestSpan } from './tracing.js';
import { pgTimestampProblem } from './validation.js';

export interface DeliveryRoutesDeps {
  sql: Sql;
  maxPayloadBytes: number;
  maxBatchBytes: number;
  /** The rate limit and backlog bound every sending route passes (admission.ts). */
  admission: Admission;
  waker: WakeUps;
  metrics: HookpostMetrics;
  /** Event-type schemas that payloads are validated against. */
  catalog: SchemaCatalog;
  /** Where a failed write of the unrouted tally is reported (it never fails the request). */
  log?: Logger | undefined;
}

/**
 * A fan-out (no endpoint_id) that created no delivery and was kept from none by a filter: no
 * endpoint of its tenant subscribes to its event type. Accepted all the same (subscribers may
 * come later; the event is in the log).
 */
function isUnrouted(item: EnqueueItem, result: EnqueueResult): boolean {
  return item.endpointId === null && result.deliveries.length === 0 && result.filtered.length === 0;
}

function resultJson(result: EnqueueResult, item: EnqueueItem) {
  const body = {
    message_id: result.messageId,
    duplicate: result.duplicate,
    deliveries: result.deliveries.map((d) => ({ id: d.id, endpoint_id: d.endpointId, status: d.status })),
    filtered: result.filtered,
  };
  if (!isUnrouted(item, result)) return body;
  const tenant = item.tenantId ?? DEFAULT_TENANT;
  return {
    ...body,
    unrouted: true,
    warning: `no endpoint of tenant ${tenant} subscribes to ${item.eventType}: nothing will be delivered`,
  };
}

/**
 * An ISO 8601 query parameter with a zone (`since`, `until`) that PostgreSQL can hold, or a 400
 * naming it: the same check as replay and the messages log (year 0000 or a +16:00 offset was a 500).
 */
function timeQuery(c: Context, name: string): string | undefined {
  const raw = c.req.query(name);
  if (raw === undefined) return undefined;
  const problem = pgTimestampProblem(raw);
  if (problem) throw new HttpError(400, 'validation_failed', `${name}: ${problem}`);
  return raw;
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

  /** The new messages that reached no endpoint: counted, and kept for the pipeline's figure. */
  async function countUnrouted(items: EnqueueItem[], results: EnqueueResult[]) {
    const unrouted = items.filter((item, i) => !results[i]!.duplicate && isUnrouted(item, results[i]!));
    if (unrouted.length === 0) return;
    deps.metrics.messagesUnrouted.inc(unrouted.length);
    const events = unrouted.map((i) => ({ tenantId: i.tenantId ?? DEFAULT_TENANT, eventType: i.eventType }));
    await recordUnrouted(deps.sql, events).catch((error: unknown) =>
      deps.log?.warn(errorFields(error), 'unrouted events not recorded for the pipeline'),
    );
  }

  async function run(caller: Caller, items: EnqueueItem[], batch: boolean, span: RequestSpan | undefined) {
    await deps.admission.checkRate(caller, items.length);
    try {
      // Tracing on: the write is a child span, and the messages keep the request span's context.
      const results = span
        ? await tracedEnqueue(span, caller, items)
        : await enqueue(deps.sql, caller, items, { waker: deps.waker });
      let queued = 0;
      const filtered = { fan_out: 0, endpoint: 0 };
      results.forEach((r, index) => {
        if (r.duplicate) return;
        queued += r.deliveries.length;
        filtered[items[index]!.endpointId === null ? 'fan_out' : 'endpoint'] += r.filtered.length;
      });
      if (queued > 0) deps.metrics.deliveriesEnqueued.inc(queued);
      for (const [target, count] of Object.entries(filtered))
        if (count > 0) deps.metrics.deliveriesFiltered.inc({ target }, count);
      await countUnrouted(items, results);
      return results;
    } catch (error) {
      if (!(error instanceof EnqueueError)) throw error;
      const details = batch ? { index: error.index } : undefined;
      if (error.kind === 'endpoint_not_found' || error.kind === 'tenant_not_found')
        throw new HttpError(404, error.kind, error.message, details);
      throw new HttpError(409, 'idempotency_conflict', error.message, details);
    }
  }

  /** enqueue() as a child span of the request's, storing its traceparent with the messages. */
  async function tracedEnqueue(span: RequestSpan, caller: Caller, items: EnqueueItem[]) {
    const write = span.child('INSERT messages', {
      'db.system.name': 'postgresql',
      'db.operation.name': 'INSERT',
      'hookpost.items': items.length,
    });
    try {
      const results = await enqueue(deps.sql, caller, items, {
        waker: deps.waker,
        traceparent: span.traceparent,
      });
      write.end();
      return results;
    } catch (error) {
      write.end(error);
      throw error;
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
    return toItem(callerOf(c), body, {
      value: body.value,
      span,
      maxPayloadBytes: deps.maxPayloadBytes,
      idempotencyKey: key,
      path: [],
      batch: false,
    });
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
      toItem(caller, raw, {
        value: item,
        span: spans[index]!,
        maxPayloadBytes: deps.maxPayloadBytes,
        idempotencyKey: key === null ? null : `${key}:${index}`,
        path: ['items', index],
        batch: true,
      }),
    );
  }

  app.post('/', async (c) => {
    const key = idempotencyHeader(c);
    const parsed = [await parseSingle(c, key)];
    await deps.admission.checkBacklog();
    const items = await checkedItems(parsed.splice(0), false);
    const [result] = await run(callerOf(c), items, false, requestSpan(c));
    return c.json(resultJson(result!, items[0]!), result!.duplicate ? 200 : 202);
  });

  app.post('/batch', async (c) => {
    const key = idempotencyHeader(c);
    const parsed = await parseBatch(c, key);
    await deps.admission.checkBacklog();
    // splice(0): hands the parsed items over, so this frame keeps no reference to their trees.
    const items = await checkedItems(parsed.splice(0), true);
    const results = await run(callerOf(c), items, true, requestSpan(c));
    const allDuplicates = results.every((r) => r.duplicate);
    return c.json({ results: results.map((r, i) => resultJson(r, items[i]!)) }, allDuplicates ? 200 : 202);
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
      data: page,
      next_cursor: rows.length > limit ? page.at(-1)!.id : null,
    });
  });

  app.get('/:id', async (c) => {
    const found = await getDelivery(deps.sql, callerOf(c), c.req.param('id'));
    if (!found) notFound('delivery', c.req.param('id'));
    // Each replay restarts attempt numbering; `replays` shows where each round began.
    const replays = await listReplaysOf(deps.sql, callerOf(c), found.delivery.id);
    const body = { ...found.delivery, attempts: found.attempts, replays };
    return c.body(withRawPayload(body, found.payload), 200, { 'content-type': 'application/json' });
  });

  return app;
}
