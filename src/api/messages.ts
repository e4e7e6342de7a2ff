/** POST /v1/messages/{id}/expunge: erase one message's payload now (an erasure request). */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { expungeMessage } from '../retention/expunge.js';
import { type ApiEnv, callerOf } from './auth.js';
import { notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';
import { expungeSchema } from './openapi/responses.js';

documentRoute({
  method: 'post',
  path: '/v1/messages/{id}/expunge',
  operationId: 'expungeMessage',
  tag: 'deliveries',
  summary: "Erase a message's payload and its attempts' response snippets now (erasure request)",
  description: 'Metadata stays; a later replay of its deliveries is 409 payload_expired. Repeatable.',
  params: z.object({ id: z.string().meta({ description: 'message id (msg_…)' }) }),
  responses: { 200: { description: 'erased (also on a repeat)', schema: expungeSchema } },
  errors: [404],
});

export function messageRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();

  // 200 on every call, the first and any repeat: each erases whatever is there and is audited.
  app.post('/:id/expunge', async (c) => {
    const id = c.req.param('id');
    const result = await expungeMessage(deps.sql, callerOf(c), id);
    if (!result) notFound('message', id);
    return c.json({
      message_id: result.messageId,
      payload_expired: true,
      payload_expired_at: result.payloadExpiredAt,
      cancelled_deliveries: result.cancelledDeliveries,
      erased_snippets: result.erasedSnippets,
      audit_id: result.auditId,
    });
  });

  return app;
}
