/** /v1/api-keys: create (the key shown once), list (no key material), revoke. */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { ADMIN_KEY_ID, type ApiKey, createKey, listKeys, revokeKey } from '../tenants/keys.js';
import { OPERATIONS_TENANT, SCOPES, TENANT_ID } from '../tenants/scope.js';
import { lockTenant } from '../tenants/tenants.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { HttpError, notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';
import { page, pageQuery } from './openapi/responses.js';
import { apiKeyCreatedSchema, apiKeySchema } from './openapi/tenant-responses.js';
import { pageLimit } from './pagination.js';
import { pgTimestampSchema } from './validation.js';

export const createSchema = z.strictObject({
  name: z.string().min(1).max(256),
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  tenant_id: z.string().regex(TENANT_ID, 'must be 1-128 of A-Za-z0-9._:-').nullable().optional(),
  // PostgreSQL-representable (a +16:00 offset was a 500), then in the future.
  expires_at: pgTimestampSchema
    .refine((v) => Date.parse(v) > Date.now(), 'must be in the future')
    .nullable()
    .optional(),
  rate_limit_per_second: z.number().positive().max(1_000_000).nullable().optional(),
});

/** The public shape of a key: never its hash, never the key. */
export function apiKeyJson(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    kind: k.kind,
    prefix: k.prefix,
    scopes: k.scopes,
    tenant_id: k.tenant_id,
    rate_limit_per_second: k.rate_limit_per_second,
    expires_at: k.expires_at,
    created_at: k.created_at,
    created_by: k.created_by,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
  };
}

documentRoute({
  method: 'post',
  path: '/v1/api-keys',
  operationId: 'createApiKey',
  tag: 'api keys',
  summary: 'Create a scoped API key, optionally bound to a tenant (admin)',
  body: createSchema,
  responses: { 201: { description: 'created; the key is shown only here', schema: apiKeyCreatedSchema } },
});
documentRoute({
  method: 'get',
  path: '/v1/api-keys',
  operationId: 'listApiKeys',
  tag: 'api keys',
  summary: 'List API keys, without key material (admin)',
  query: z.object({
    ...pageQuery,
    include_portal: z
      .enum(['true', 'false'])
      .optional()
      .meta({ description: 'also list portal-session keys' }),
  }),
  responses: { 200: { description: 'a page of keys', schema: page(apiKeySchema) } },
});
documentRoute({
  method: 'delete',
  path: '/v1/api-keys/{id}',
  operationId: 'revokeApiKey',
  tag: 'api keys',
  summary: 'Revoke a key (401 on every process within 2 s) (admin)',
  params: z.object({ id: z.string().meta({ description: 'key id (key_…)' }) }),
  responses: { 200: { description: 'the revoked key', schema: apiKeySchema } },
  errors: [404, 409],
});

/** Routes under /v1/api-keys (admin scope). */
export function apiKeyRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();

  app.post('/', async (c) => {
    const body = validate(createSchema, (await readJsonBody(c, 16 * 1024)).value);
    if (body.tenant_id === OPERATIONS_TENANT) {
      throw new HttpError(
        400,
        'validation_failed',
        `tenant_id: ${OPERATIONS_TENANT} is reserved for admin keys`,
      );
    }
    if (body.tenant_id && body.scopes.includes('admin')) {
      throw new HttpError(400, 'validation_failed', 'scopes: a key bound to a tenant cannot have admin');
    }
    const caller = callerOf(c);
    const tenantId = body.tenant_id;
    // Under the tenant's row lock: a key is never created for a tenant being deleted.
    const { apiKey, key } = await deps.sql.begin(async (tx) => {
      if (tenantId && (await lockTenant(tx, tenantId)) === 'deleted') notFound('tenant', tenantId);
      return createKey(tx, {
        name: body.name,
        scopes: [...new Set(body.scopes)],
        tenantId: tenantId ?? null,
        expiresAt: body.expires_at ? new Date(body.expires_at) : null,
        rateLimitPerSecond: body.rate_limit_per_second ?? null,
        createdBy: caller.keyId,
      });
    });
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'api_key.created',
      resourceType: 'api_key',
      resourceId: apiKey.id,
      tenantId: apiKey.tenant_id,
      details: { name: apiKey.name, scopes: apiKey.scopes, prefix: apiKey.prefix },
    });
    return c.json({ ...apiKeyJson(apiKey), key }, 201);
  });

  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const rows = await listKeys(deps.sql, {
      limit: limit + 1,
      cursor: c.req.query('cursor'),
      includePortal: c.req.query('include_portal') === 'true',
    });
    const page = rows.slice(0, limit);
    return c.json({ data: page.map(apiKeyJson), next_cursor: rows.length > limit ? page.at(-1)!.id : null });
  });

  app.delete('/:id', async (c) => {
    const id = c.req.param('id');
    if (id === ADMIN_KEY_ID) {
      throw new HttpError(
        409,
        'admin_token',
        'the admin token is configured by HOOKPOST_ADMIN_TOKEN (or the data directory): change it there',
      );
    }
    const revoked = await revokeKey(deps.sql, id);
    if (!revoked) notFound('api_key', id);
    await recordAudit(deps.sql, actorOf(callerOf(c)), {
      action: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: id,
      tenantId: revoked.tenant_id,
      details: { name: revoked.name },
    });
    return c.json(apiKeyJson(revoked));
  });

  return app;
}
