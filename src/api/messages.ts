/** POST /v1/messages/{id}/expunge: erase one message's payload now (an erasure request). */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { expungeMessage } from '../retention/expunge.js';
import { type ApiEnv, callerOf } from './auth.js';
import { notFound } from './errors.js';

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
