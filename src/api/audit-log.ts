/** GET /v1/audit-log: who did what and when, newest first. */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { listAudit } from '../tenants/audit.js';
import { type ApiEnv, callerOf } from './auth.js';
import { documentRoute } from './openapi/registry.js';
import { page, pageQuery } from './openapi/responses.js';
import { auditEntrySchema } from './openapi/tenant-responses.js';
import { pageLimit } from './pagination.js';

documentRoute({
  method: 'get',
  path: '/v1/audit-log',
  operationId: 'listAuditLog',
  tag: 'api keys',
  summary: 'Who created, changed, deleted or rotated what, and when; newest first (admin)',
  query: z.object(pageQuery),
  responses: { 200: { description: 'a page of audit entries', schema: page(auditEntrySchema) } },
});

/** GET /v1/audit-log, scoped like every other read (an admin sees every tenant's rows). */
export function auditLogRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();
  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const rows = await listAudit(deps.sql, callerOf(c), { limit: limit + 1, cursor: c.req.query('cursor') });
    const page = rows.slice(0, limit);
    return c.json({ data: page, next_cursor: rows.length > limit ? page.at(-1)!.id : null });
  });
  return app;
}
