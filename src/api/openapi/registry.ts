/**
 * The route registry behind GET /openapi.json. Each route is described once with the zod schemas
 * that validate its request (the same objects the handler passes to validate()), so the document
 * cannot drift from what the API accepts. Adding a route means one `documentRoute({...})` call
 * next to it; test/api/openapi.test.ts walks `app.routes` and fails on any route left out.
 *
 * Why a registry rather than @hono/zod-openapi: that library wants every route rewritten as
 * `createRoute()` + `app.openapi()`, and the route files are shared with other work in flight.
 * zod 4's own z.toJSONSchema() gives the JSON Schema 2020-12 that OpenAPI 3.1 uses unchanged.
 */
import { z } from 'zod';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface DocumentedResponse {
  description: string;
  /** The JSON body; omitted for an empty one (204). */
  schema?: z.ZodType;
  /** For non-JSON bodies (Prometheus text, HTML). */
  contentType?: string;
  headers?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

export interface DocumentedRoute {
  method: HttpMethod;
  /** OpenAPI form: `/v1/endpoints/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Bearer token required (everything under /v1). Default: true for /v1 paths. */
  auth?: boolean;
  /** Path parameters: an object schema whose keys are the `{names}` in the path. */
  params?: z.ZodObject;
  /** Query parameters: an object schema of strings (as they arrive). */
  query?: z.ZodObject;
  /** Request headers the route reads. */
  headers?: { name: string; description: string; schema: z.ZodType; required?: boolean }[];
  /** The JSON request body, as validated. */
  body?: z.ZodType;
  /** Successful responses by status. */
  responses: Record<number, DocumentedResponse>;
  /**
   * Error statuses beyond those implied (401 for auth, 400 for a query or body, 413/415 for a
   * body), e.g. 404 for an unknown id, 409 for a conflict.
   */
  errors?: number[];
}

const routes = new Map<string, DocumentedRoute>();

/** Registers (or replaces) the description of one route. */
export function documentRoute(route: DocumentedRoute): void {
  routes.set(`${route.method} ${route.path}`, route);
}

/** Every route documented so far, in registration order. */
export function documentedRoutes(): DocumentedRoute[] {
  return [...routes.values()];
}

/** The contract's error body; every 4xx and 5xx has this shape. */
export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'snake_case, stable: branch on this' }),
      message: z.string().meta({ description: 'for people; never contains a payload or secret' }),
      details: z.unknown().optional().meta({ description: 'e.g. [{field, message}] for validation errors' }),
    }),
  })
  .meta({ id: 'Error' });

export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'invalid input (validation_failed, invalid_json, invalid_text)',
  401: 'missing or invalid bearer token',
  403: 'the key lacks the scope this route needs',
  404: 'unknown id',
  409: 'conflict with the current state',
  413: 'request body too large',
  415: 'request body is not JSON',
  429: 'rate limited; see Retry-After',
  503: 'temporarily unavailable; see Retry-After',
};
