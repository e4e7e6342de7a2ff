/** /v1/event-types: the catalog of event types, with optional JSON Schemas (draft 2020-12). */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import {
  deleteEventType,
  getEventType,
  listEventTypes,
  putEventType,
  type SchemaCatalog,
  SchemaError,
} from '../tenants/event-types.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { HttpError, notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';
import { page, pageQuery } from './openapi/responses.js';
import { eventTypeSchema } from './openapi/tenant-responses.js';
import { pageLimit } from './pagination.js';

const NAME = /^[^*\s]{1,256}$/;

export const putSchema = z.strictObject({
  description: z.string().max(4096).optional(),
  schema: z
    .union([z.record(z.string(), z.unknown()), z.boolean()])
    .nullable()
    .optional(),
  example: z.unknown().optional(),
  deprecated: z.boolean().optional(),
});

function eventTypeName(raw: string): string {
  if (!NAME.test(raw)) {
    throw new HttpError(400, 'validation_failed', 'name: 1-256 characters, no spaces or *');
  }
  return raw;
}

const nameParam = z.object({ name: z.string().meta({ description: 'event type, e.g. order.created' }) });

documentRoute({
  method: 'get',
  path: '/v1/event-types',
  operationId: 'listEventTypes',
  tag: 'event types',
  summary: 'The event-type catalog, by name (keyset-paginated)',
  query: z.object(pageQuery),
  responses: { 200: { description: 'a page of event types', schema: page(eventTypeSchema) } },
});
documentRoute({
  method: 'get',
  path: '/v1/event-types/{name}',
  operationId: 'getEventType',
  tag: 'event types',
  summary: 'One event type with its schema and example',
  params: nameParam,
  responses: { 200: { description: 'the event type', schema: eventTypeSchema } },
  errors: [404],
});
documentRoute({
  method: 'put',
  path: '/v1/event-types/{name}',
  operationId: 'putEventType',
  tag: 'event types',
  summary: 'Create or update an event type; with a schema, enqueue validates payloads (admin)',
  params: nameParam,
  body: putSchema,
  responses: {
    200: { description: 'updated', schema: eventTypeSchema },
    201: { description: 'created', schema: eventTypeSchema },
  },
});
documentRoute({
  method: 'delete',
  path: '/v1/event-types/{name}',
  operationId: 'deleteEventType',
  tag: 'event types',
  summary: 'Remove an event type from the catalog (admin)',
  params: nameParam,
  responses: { 204: { description: 'deleted' } },
  errors: [404],
});

/** Routes under /v1/event-types; PUT and DELETE drop this process's cached catalog read. */
export function eventTypeRoutes(deps: { sql: Sql; catalog: SchemaCatalog }) {
  const app = new Hono<ApiEnv>();

  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const rows = await listEventTypes(deps.sql, { limit: limit + 1, cursor: c.req.query('cursor') });
    const page = rows.slice(0, limit);
    return c.json({ data: page, next_cursor: rows.length > limit ? page.at(-1)!.name : null });
  });

  app.get('/:name', async (c) => {
    const found = await getEventType(deps.sql, c.req.param('name'));
    return found ? c.json(found) : notFound('event_type', c.req.param('name'));
  });

  app.put('/:name', async (c) => {
    const name = eventTypeName(c.req.param('name'));
    const body = validate(putSchema, (await readJsonBody(c, 256 * 1024)).value);
    let result: Awaited<ReturnType<typeof putEventType>>;
    try {
      result = await putEventType(deps.sql, name, body);
    } catch (error) {
      if (error instanceof SchemaError) throw new HttpError(400, 'invalid_schema', error.message);
      throw error;
    }
    deps.catalog.invalidate();
    await recordAudit(deps.sql, actorOf(callerOf(c)), {
      action: result.created ? 'event_type.created' : 'event_type.updated',
      resourceType: 'event_type',
      resourceId: name,
      details: { fields: Object.keys(body), schema_version: result.eventType.schema_version },
    });
    return c.json(result.eventType, result.created ? 201 : 200);
  });

  app.delete('/:name', async (c) => {
    const name = c.req.param('name');
    if (!(await deleteEventType(deps.sql, name))) notFound('event_type', name);
    deps.catalog.invalidate();
    await recordAudit(deps.sql, actorOf(callerOf(c)), {
      action: 'event_type.deleted',
      resourceType: 'event_type',
      resourceId: name,
    });
    return c.body(null, 204);
  });

  return app;
}
