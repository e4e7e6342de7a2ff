/** /v1/endpoints: create, list, read, update, delete, rotate the signing secret. */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import type { Endpoint, EndpointStore } from '../endpoints/store.js';
import { urlProblem } from '../endpoints/targets.js';
import { readJsonBody, validate } from './body.js';
import { healthRoutes } from './endpoint-health.js';
import { HttpError } from './errors.js';
import { pageLimit } from './pagination.js';

const MAX_BODY_BYTES = 256 * 1024;

/** Headers hookpost sets itself; an endpoint may not override them. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const headersSchema = z
  .record(
    z.string(),
    z
      .string()
      .max(4096)
      .regex(/^[^\r\n]*$/, 'must not contain line breaks'),
  )
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > 50) ctx.addIssue({ code: 'custom', message: 'at most 50 headers' });
    for (const name of names) {
      if (!HEADER_NAME.test(name))
        ctx.addIssue({ code: 'custom', path: [name], message: 'is not a valid header name' });
      else if (RESERVED_HEADERS.has(name.toLowerCase())) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'is set by hookpost and cannot be overridden',
        });
      }
    }
  });

const fields = {
  url: z.string().max(2048),
  description: z.string().max(1024),
  event_types: z.array(z.string().min(1).max(256)).max(256),
  rate_limit_per_second: z.number().positive().max(100_000).nullable(),
  max_in_flight: z.number().int().positive().max(10_000).nullable(),
  headers: headersSchema,
  metadata: z.record(z.string(), z.unknown()),
};

export const createSchema = z.strictObject({
  url: fields.url,
  description: fields.description.optional(),
  event_types: fields.event_types.optional(),
  rate_limit_per_second: fields.rate_limit_per_second.optional(),
  max_in_flight: fields.max_in_flight.optional(),
  headers: fields.headers.optional(),
  metadata: fields.metadata.optional(),
});

export const patchSchema = createSchema.partial().extend({ enabled: z.boolean().optional() });

/** The public JSON shape of an endpoint (snake_case, as in the contract). */
export function endpointJson(e: Endpoint) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    rate_limit_per_second: e.rateLimitPerSecond,
    max_in_flight: e.maxInFlight,
    headers: e.headers,
    metadata: e.metadata,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  };
}

function checkUrl(url: string | undefined, allowPrivate: boolean) {
  if (url === undefined) return;
  const problem = urlProblem(url, allowPrivate);
  if (problem)
    throw new HttpError(400, 'validation_failed', `url: ${problem}`, [{ field: 'url', message: problem }]);
}

export function notFound(id: string): never {
  throw new HttpError(404, 'endpoint_not_found', `endpoint ${id} not found`);
}

export interface EndpointRoutesDeps {
  sql: Sql;
  endpoints: EndpointStore;
  allowPrivateTargets: boolean;
  secretGraceSeconds: number;
}

export function endpointRoutes(deps: EndpointRoutesDeps) {
  const app = new Hono();

  app.post('/', async (c) => {
    const body = validate(createSchema, (await readJsonBody(c, MAX_BODY_BYTES)).value);
    checkUrl(body.url, deps.allowPrivateTargets);
    const { endpoint, secret } = await deps.endpoints.create({
      url: body.url,
      description: body.description,
      eventTypes: body.event_types,
      rateLimitPerSecond: body.rate_limit_per_second,
      maxInFlight: body.max_in_flight,
      headers: body.headers,
      metadata: body.metadata,
    });
    return c.json({ ...endpointJson(endpoint), secret }, 201);
  });

  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const rows = await deps.endpoints.list(limit + 1, c.req.query('cursor'));
    const page = rows.slice(0, limit);
    return c.json({
      data: page.map(endpointJson),
      next_cursor: rows.length > limit ? page.at(-1)!.id : null,
    });
  });

  // Registered before '/:id' so that "slow" is not taken for an id.
  healthRoutes(app, deps);

  app.get('/:id', async (c) => {
    const endpoint = await deps.endpoints.get(c.req.param('id'));
    return endpoint ? c.json(endpointJson(endpoint)) : notFound(c.req.param('id'));
  });

  app.patch('/:id', async (c) => {
    const body = validate(patchSchema, (await readJsonBody(c, MAX_BODY_BYTES)).value);
    checkUrl(body.url, deps.allowPrivateTargets);
    const endpoint = await deps.endpoints.update(c.req.param('id'), {
      url: body.url,
      description: body.description,
      eventTypes: body.event_types,
      rateLimitPerSecond: body.rate_limit_per_second,
      maxInFlight: body.max_in_flight,
      headers: body.headers,
      metadata: body.metadata,
      enabled: body.enabled,
    });
    return endpoint ? c.json(endpointJson(endpoint)) : notFound(c.req.param('id'));
  });

  app.delete('/:id', async (c) => {
    const deleted = await deps.endpoints.delete(c.req.param('id'));
    return deleted ? c.body(null, 204) : notFound(c.req.param('id'));
  });

  app.post('/:id/rotate-secret', async (c) => {
    const secret = await deps.endpoints.rotateSecret(c.req.param('id'), deps.secretGraceSeconds);
    if (!secret) notFound(c.req.param('id'));
    return c.json({
      id: c.req.param('id'),
      secret,
      previous_secret_expires_in_seconds: deps.secretGraceSeconds,
    });
  });

  return app;
}
