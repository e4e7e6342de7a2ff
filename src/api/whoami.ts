/**
 * GET /v1/whoami: the key a request carries — its id, name, tenant and scopes. Any valid key may
 * ask about itself (route-scopes.ts: ANY_KEY). The partner portal asks before it adopts a session
 * link, so it can name the link's tenant without storing the token.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { SCOPES } from '../tenants/scope.js';
import { type ApiEnv, callerOf } from './auth.js';
import { documentRoute } from './openapi/registry.js';

export const whoamiSchema = z
  .object({
    key_id: z.string().meta({ description: 'key_…' }),
    name: z.string(),
    tenant_id: z
      .string()
      .nullable()
      .meta({ description: 'the tenant the key is bound to; null: every tenant' }),
    scopes: z.array(z.enum(SCOPES)),
  })
  .meta({ id: 'Whoami' });

documentRoute({
  method: 'get',
  path: '/v1/whoami',
  operationId: 'whoami',
  tag: 'api keys',
  summary: 'The key this request carries: its id, name, tenant and scopes (any key)',
  responses: { 200: { description: 'the calling key', schema: whoamiSchema } },
});

export function whoamiRoutes() {
  const app = new Hono<ApiEnv>();
  app.get('/', (c) => {
    const caller = callerOf(c);
    return c.json({
      key_id: caller.keyId,
      name: caller.keyName,
      tenant_id: caller.tenantId,
      scopes: [...caller.scopes],
    });
  });
  return app;
}
