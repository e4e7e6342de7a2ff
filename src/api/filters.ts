/**
 * Content filters in the API: the `filter` field of endpoints (validated and compiled here, so a
 * bad filter is a 400 before anything is written) and POST /v1/filters/test, which answers with
 * the very predicate the fan-out evaluates (PostgreSQL's jsonb_path_match of the compiled path).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { passesFilter } from '../deliveries/fan-out.js';
import { type CompiledFilter, compileFilter } from '../filters/jsonpath.js';
import { filterableText } from '../filters/payload-text.js';
import { FilterError, MAX_FILTER_BYTES, MAX_FILTER_DEPTH } from '../filters/syntax.js';
import type { ApiEnv } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { ENVELOPE_BYTES, payloadBytes } from './enqueue-items.js';
import { HttpError } from './errors.js';
import { documentRoute } from './openapi/registry.js';

const FILTER_DESCRIPTION =
  'A content filter (docs/filters.md): the endpoint receives only events whose payload matches. ' +
  'Plain values match equal values (an array field: contains), nested objects descend, and ' +
  '$eq $neq $gt $gte $lt $lte $in $nin $exist $or $and $not are operators. At most ' +
  `${MAX_FILTER_DEPTH} levels and ${MAX_FILTER_BYTES} bytes; null removes it.`;

/**
 * The `filter` field as the request schemas take it: any JSON, so that every problem with it
 * (not an object included) is one `400 invalid_filter` from compileFilter, not a schema error.
 */
export const filterField = z.unknown().meta({
  type: ['object', 'null'],
  additionalProperties: true,
  description: FILTER_DESCRIPTION,
  examples: [{ type: 'order.created', data: { currency: 'EUR', amount: { $gte: 100 } } }],
});

/** Validates and compiles a request's `filter`; undefined stays undefined (a PATCH leaving it). */
export function filterFromRequest(value: unknown): CompiledFilter | null | undefined {
  if (value === undefined || value === null) return value;
  try {
    return compileFilter(value);
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    throw new HttpError(400, 'invalid_filter', error.message, {
      operator: error.operator,
      pointer: error.pointer,
    });
  }
}

const testSchema = z.strictObject({
  filter: filterField,
  payload: z
    .custom<unknown>((v) => v !== undefined, { message: 'is required' })
    .meta({
      description: 'an event payload, e.g. a recent message from GET /v1/messages',
    }),
});

documentRoute({
  method: 'post',
  path: '/v1/filters/test',
  operationId: 'testFilter',
  tag: 'endpoints',
  summary: 'Try a filter on a payload (endpoints:read)',
  description:
    'Answers whether an endpoint with this filter would receive an event with this payload: the ' +
    'same evaluation the enqueue makes. Nothing is stored.',
  body: testSchema,
  responses: {
    200: {
      description: 'whether the payload matches',
      schema: z.object({ matches: z.boolean() }),
    },
  },
});

export interface FilterRoutesDeps {
  sql: Sql;
  maxPayloadBytes: number;
}

/** Mounted under /v1/filters. */
export function filterRoutes(deps: FilterRoutesDeps) {
  const app = new Hono<ApiEnv>();
  app.post('/test', async (c) => {
    const body = await readJsonBody(c, deps.maxPayloadBytes + ENVELOPE_BYTES);
    const { filter } = validate(testSchema, body.value);
    const compiled = filterFromRequest(filter ?? {});
    // The payload's own text, so numbers compare as written, exactly as at enqueue.
    const text = payloadBytes(body.text, 0, [], deps.maxPayloadBytes, body.asciiBytes).toString('utf8');
    if (!compiled?.path) return c.json({ matches: true });
    // ::text first: a parameter typed jsonb would be JSON-encoded again by postgres.js.
    const doc = deps.sql`${filterableText(text) ?? text}::text::jsonb`;
    const [row] = await deps.sql<{ matches: boolean }[]>`
      SELECT ${passesFilter(deps.sql, doc, deps.sql`${compiled.path}::jsonpath`)} AS matches`;
    return c.json({ matches: row!.matches });
  });
  return app;
}
