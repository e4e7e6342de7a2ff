/**
 * An enqueue request's items: the schemas of a single item and a batch, the Idempotency-Key
 * header, and each item validated and its payload cut out of the request's own bytes (never
 * re-serialised: the partner receives exactly what the caller sent). The routes: deliveries.ts.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import type { EnqueueItem } from '../deliveries/enqueue-types.js';
import { type Caller, TENANT_ID } from '../tenants/scope.js';
import { objectMemberSpans, type Span } from '../util/raw-json.js';
import { type JsonBody, validate } from './body.js';
import { HttpError } from './errors.js';
import { tenantForWrite } from './tenant-arg.js';
import { MAX_PAYLOAD_DEPTH } from './validation.js';

export const MAX_BATCH_ITEMS = 1000;
/** Room for the envelope around the largest payload in a single-delivery request. */
export const ENVELOPE_BYTES = 64 * 1024;

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

/** An item ready to enqueue, with its parsed payload for schema validation. */
export interface ParsedItem {
  item: EnqueueItem;
  payload: unknown;
}

export function idempotencyHeader(c: Context): string | null {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return null;
  if (key.length === 0 || key.length > 255) {
    throw new HttpError(400, 'validation_failed', 'Idempotency-Key: must be 1 to 255 characters');
  }
  return key;
}

/** Where one item sits in a request body, and what applies to it. */
interface ItemInBody {
  /** The item as parsed, and its span in the body's text. */
  value: unknown;
  span: Span;
  maxPayloadBytes: number;
  /** The request's Idempotency-Key, or a batch item's `<key>:<index>`. */
  idempotencyKey: string | null;
  /** Where the item is, for error messages (`['items', 3]` in a batch). */
  path: (string | number)[];
  batch: boolean;
}

/**
 * The `payload` member of the JSON object at `objectStart` in `text`, cut out byte for byte (a
 * view of `asciiBytes` when the body is ASCII, where offsets agree): 400 when nested deeper than
 * MAX_PAYLOAD_DEPTH, 413 when over `maxPayloadBytes`. `path` names the object in messages.
 */
export function payloadBytes(
  text: string,
  objectStart: number,
  path: (string | number)[],
  maxPayloadBytes: number,
  asciiBytes?: Buffer | undefined,
  details?: unknown,
): Buffer {
  const payloadSpan = objectMemberSpans(text, objectStart).get('payload')!;
  if (payloadSpan.depth > MAX_PAYLOAD_DEPTH) {
    // Deeper JSON cannot be rendered back (JSON.stringify recurses) and no receiver needs it.
    const field = [...path, 'payload'].join('.');
    const message = `is nested ${payloadSpan.depth} levels deep; at most ${MAX_PAYLOAD_DEPTH} are accepted`;
    throw new HttpError(400, 'validation_failed', `${field}: ${message}`, [{ field, message }]);
  }
  const payload = asciiBytes
    ? asciiBytes.subarray(payloadSpan.start, payloadSpan.end)
    : Buffer.from(text.slice(payloadSpan.start, payloadSpan.end), 'utf8');
  if (payload.length > maxPayloadBytes) {
    throw new HttpError(
      413,
      'payload_too_large',
      `${[...path, 'payload'].join('.')}: ${payload.length} bytes is over the ${maxPayloadBytes}-byte limit`,
      details,
    );
  }
  return payload;
}

/** Validates one item and cuts its payload out of the request text, byte for byte. */
export function toItem(
  caller: Caller,
  { text, asciiBytes }: Pick<JsonBody, 'text' | 'asciiBytes'>,
  { value, span, maxPayloadBytes, idempotencyKey, path, batch }: ItemInBody,
): ParsedItem {
  const item = validate(batch ? batchItemSchema : itemSchema, value, path);
  const tenantId = tenantForWrite(caller, item.tenant_id) ?? null;
  const payload = payloadBytes(
    text,
    span.start,
    path,
    maxPayloadBytes,
    asciiBytes,
    batch ? { index: path[1] } : undefined,
  );
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
