/** Turns the route registry into an OpenAPI 3.1 document (JSON Schema 2020-12 from zod 4). */
import { z } from 'zod';
import { VERSION } from '../../version.js';
import { type DocumentedRoute, documentedRoutes, ERROR_DESCRIPTIONS, errorSchema } from './registry.js';

type Json = Record<string, unknown>;

/**
 * One zod schema as JSON Schema. Schemas named with `.meta({id})` come back under `$defs`; they
 * move to components.schemas so one definition serves the whole document.
 */
function toSchema(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  // Input side for requests (a `hours` string that becomes a number is a string on the wire);
  // z.custom (the raw payload) has no JSON Schema form and means "any JSON value".
  const json = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    override: dropSafeIntegerBounds,
  }) as Json;
  delete json.$schema;
  const defs = json.$defs as Record<string, Json> | undefined;
  delete json.$defs;
  for (const [name, def] of Object.entries(defs ?? {})) components[name] = rewriteRefs(def);
  return rewriteRefs(json);
}

/** z.int() states ±2^53 as its bounds; they say nothing to a reader, so they are left out. */
function dropSafeIntegerBounds({ jsonSchema }: { jsonSchema: { minimum?: number; maximum?: number } }) {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}

function rewriteRefs<T>(value: T): T {
  if (Array.isArray(value)) return value.map(rewriteRefs) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value as Json)) {
    out[key] =
      key === '$ref' && typeof v === 'string'
        ? v.replace('#/$defs/', '#/components/schemas/')
        : rewriteRefs(v);
  }
  return out as T;
}

function parameters(route: DocumentedRoute, components: Json): Json[] {
  const list: Json[] = [];
  const add = (where: 'path' | 'query', shape: z.ZodObject | undefined) => {
    if (!shape) return;
    const json = toSchema(shape, 'input', components);
    const required = new Set((json.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((json.properties ?? {}) as Record<string, Json>)) {
      const { description, ...rest } = schema;
      list.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  };
  add('path', route.params);
  add('query', route.query);
  for (const h of route.headers ?? []) {
    list.push({
      name: h.name,
      in: 'header',
      required: h.required ?? false,
      description: h.description,
      schema: toSchema(h.schema, 'input', components),
    });
  }
  return list;
}

function responses(route: DocumentedRoute, components: Json): Json {
  const out: Json = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const entry: Json = { description: r.description };
    if (r.headers) entry.headers = r.headers;
    if (r.contentType) entry.content = { [r.contentType]: { schema: { type: 'string' } } };
    else if (r.schema)
      entry.content = { 'application/json': { schema: toSchema(r.schema, 'output', components) } };
    out[status] = entry;
  }
  const errors = new Set(route.errors ?? []);
  if (isAuthed(route)) errors.add(401);
  if (route.query || route.body || route.params) errors.add(400);
  if (route.body) {
    errors.add(413);
    errors.add(415);
  }
  for (const status of [...errors].sort()) {
    out[status] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return out;
}

function isAuthed(route: DocumentedRoute): boolean {
  return route.auth ?? route.path.startsWith('/v1/');
}

/** Tags in reading order; a tag not listed here follows them, in registration order. */
const TAG_ORDER = [
  'endpoints',
  'deliveries',
  'dead letters',
  'event types',
  'tenants',
  'api keys',
  'operations',
  'pages',
];
const METHOD_ORDER = ['get', 'post', 'put', 'patch', 'delete'];

/** By tag, then path, then method: registration order depends on import order, not on meaning. */
function orderedRoutes(): DocumentedRoute[] {
  const all = documentedRoutes();
  const tagRank = (tag: string) => {
    const known = TAG_ORDER.indexOf(tag);
    return known >= 0 ? known : TAG_ORDER.length + all.findIndex((r) => r.tag === tag);
  };
  return [...all].sort(
    (a, b) =>
      tagRank(a.tag) - tagRank(b.tag) ||
      a.path.localeCompare(b.path) ||
      METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method),
  );
}

/** The whole document, built from every registered route. */
export function buildOpenApiDocument(): Json {
  const components: Json = {};
  toSchema(errorSchema, 'output', components);
  const paths: Record<string, Json> = {};
  const tags = new Set<string>();
  for (const route of orderedRoutes()) {
    tags.add(route.tag);
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: isAuthed(route) ? [{ bearer: [] }] : [],
    };
    const params = parameters(route, components);
    if (params.length > 0) operation.parameters = params;
    if (route.body) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: toSchema(route.body, 'input', components) } },
      };
    }
    operation.responses = responses(route, components);
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'hookpost',
      version: VERSION,
      description:
        'Outbound webhook delivery: durable, signed (Standard Webhooks), retried, observable. ' +
        'Every route under /v1 takes `Authorization: Bearer <key>`. Errors are ' +
        '`{"error": {"code", "message", "details"?}}`.',
    },
    tags: [...tags].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key or the admin token' },
      },
    },
  };
}
