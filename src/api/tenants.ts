/** /v1/tenants: create or update by id, read with counts, list, delete; portal sessions. */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { createKey } from '../tenants/keys.js';
import { OPERATIONS_TENANT, type Scope, TENANT_ID } from '../tenants/scope.js';
import { deleteTenant, getTenant, listTenants, putTenant } from '../tenants/tenants.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { HttpError, notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';
import { page, pageQuery } from './openapi/responses.js';
import {
  portalSessionSchema,
  tenantDeletedSchema,
  tenantSchema,
  tenantWithCountsSchema,
} from './openapi/tenant-responses.js';
import { pageLimit } from './pagination.js';

export const putSchema = z.strictObject({
  name: z.string().max(256).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const portalSchema = z.strictObject({
  expires_in_seconds: z.number().int().min(60).max(86_400).optional(),
});

/** What a partner's portal key may do (the contract's "Partner portal"). */
export const PORTAL_SCOPES: Scope[] = ['endpoints:read', 'endpoints:write', 'deliveries:read', 'replay'];

function tenantId(raw: string): string {
  if (!TENANT_ID.test(raw)) {
    throw new HttpError(400, 'validation_failed', 'tenant_id: must be 1-128 of A-Za-z0-9._:-', [
      { field: 'tenant_id', message: 'must be 1-128 of A-Za-z0-9._:-' },
    ]);
  }
  return raw;
}

const tenantParam = z.object({ id: z.string().meta({ description: 'tenant id (1-128 of A-Za-z0-9._:-)' }) });

documentRoute({
  method: 'get',
  path: '/v1/tenants',
  operationId: 'listTenants',
  tag: 'tenants',
  summary: 'List tenants (keyset-paginated; admin)',
  query: z.object(pageQuery),
  responses: { 200: { description: 'a page of tenants', schema: page(tenantSchema) } },
});
documentRoute({
  method: 'put',
  path: '/v1/tenants/{id}',
  operationId: 'putTenant',
  tag: 'tenants',
  summary: 'Create or update a tenant by your own id (admin)',
  params: tenantParam,
  body: putSchema,
  responses: {
    200: { description: 'updated', schema: tenantSchema },
    201: { description: 'created', schema: tenantSchema },
  },
});
documentRoute({
  method: 'get',
  path: '/v1/tenants/{id}',
  operationId: 'getTenant',
  tag: 'tenants',
  summary: 'A tenant with counts of endpoints, queued and dead-lettered deliveries (admin)',
  params: tenantParam,
  responses: { 200: { description: 'the tenant', schema: tenantWithCountsSchema } },
  errors: [404],
});
documentRoute({
  method: 'delete',
  path: '/v1/tenants/{id}',
  operationId: 'deleteTenant',
  tag: 'tenants',
  summary:
    'Delete a tenant: its endpoints deleted, queued deliveries cancelled, its API keys and portal sessions revoked, history kept (admin)',
  description:
    'Revoked keys answer 401 on every API process within 2 s. The tenant comes back only by an explicit ' +
    'PUT (its old keys stay revoked); until then an enqueue or an endpoint create naming it is 404 tenant_not_found.',
  params: tenantParam,
  responses: { 200: { description: 'deleted', schema: tenantDeletedSchema } },
  errors: [404, 409],
});
documentRoute({
  method: 'post',
  path: '/v1/tenants/{id}/portal-sessions',
  operationId: 'createPortalSession',
  tag: 'tenants',
  summary: 'A short-lived key bound to the tenant and the /portal URL that signs in with it (admin)',
  description:
    'The body is optional. The key has endpoints:read, endpoints:write, deliveries:read and replay; ' +
    'the token travels in the URL fragment, which browsers never send to a server.',
  params: tenantParam,
  body: portalSchema,
  responses: {
    201: { description: 'the session; the token is shown only here', schema: portalSessionSchema },
  },
  errors: [404],
});

/** Routes under /v1/tenants (admin scope, from route-scopes.ts). */
export function tenantRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();

  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const rows = await listTenants(deps.sql, callerOf(c), {
      limit: limit + 1,
      cursor: c.req.query('cursor'),
    });
    const page = rows.slice(0, limit);
    return c.json({ data: page, next_cursor: rows.length > limit ? page.at(-1)!.id : null });
  });

  app.put('/:id', async (c) => {
    const id = tenantId(c.req.param('id'));
    const body = validate(putSchema, (await readJsonBody(c, 64 * 1024)).value);
    const { tenant, created } = await putTenant(deps.sql, id, body);
    await recordAudit(deps.sql, actorOf(callerOf(c)), {
      action: created ? 'tenant.created' : 'tenant.updated',
      resourceType: 'tenant',
      resourceId: id,
      tenantId: id,
      details: { fields: Object.keys(body) },
    });
    return c.json(tenant, created ? 201 : 200);
  });

  app.get('/:id', async (c) => {
    const tenant = await getTenant(deps.sql, callerOf(c), c.req.param('id'));
    return tenant ? c.json(tenant) : notFound('tenant', c.req.param('id'));
  });

  app.delete('/:id', async (c) => {
    const id = c.req.param('id');
    if (id === OPERATIONS_TENANT) {
      throw new HttpError(
        409,
        'reserved_tenant',
        `the tenant ${OPERATIONS_TENANT} is reserved and cannot be deleted`,
      );
    }
    const result = await deleteTenant(deps.sql, callerOf(c), id);
    if (!result) notFound('tenant', id);
    await recordAudit(deps.sql, actorOf(callerOf(c)), {
      action: 'tenant.deleted',
      resourceType: 'tenant',
      resourceId: id,
      tenantId: id,
      details: {
        endpoints_deleted: result.endpoints,
        deliveries_cancelled: result.cancelled,
        api_keys_revoked: result.keysRevoked,
      },
    });
    return c.json({
      id,
      deleted: true,
      endpoints_deleted: result.endpoints,
      deliveries_cancelled: result.cancelled,
      api_keys_revoked: result.keysRevoked,
    });
  });

  /**
   * A short-lived key bound to the tenant for its partner portal. The token travels in the URL
   * fragment, which browsers never send to a server, so it stays out of access and proxy logs.
   */
  app.post('/:id/portal-sessions', async (c) => {
    const id = c.req.param('id');
    const caller = callerOf(c);
    const tenant = await getTenant(deps.sql, caller, id);
    if (!tenant || id === OPERATIONS_TENANT) notFound('tenant', id);
    // The body is optional: no body means the defaults.
    const empty = c.req.header('content-length') === '0' || !c.req.raw.body;
    const body = validate(portalSchema, empty ? {} : (await readJsonBody(c, 4096)).value);
    const seconds = body.expires_in_seconds ?? 3600;
    const expiresAt = new Date(Date.now() + seconds * 1000);
    const { apiKey, key } = await createKey(deps.sql, {
      name: `portal session for ${id}`,
      kind: 'portal',
      scopes: PORTAL_SCOPES,
      tenantId: id,
      expiresAt,
      createdBy: caller.keyId,
    });
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'portal_session.created',
      resourceType: 'portal_session',
      resourceId: apiKey.id,
      tenantId: id,
      details: { expires_at: expiresAt.toISOString() },
    });
    const origin = new URL(c.req.url).origin;
    return c.json(
      {
        id: apiKey.id,
        url: `${origin}/portal#token=${encodeURIComponent(key)}`,
        token: key,
        tenant_id: id,
        scopes: PORTAL_SCOPES,
        expires_at: expiresAt,
      },
      201,
    );
  });

  return app;
}
