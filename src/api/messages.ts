/** POST /v1/messages/{id}/expunge: erase one message's payload now (an erasure request). */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { expungeMessage } from '../retention/expunge.js';
import { actorOf } from './dead-letters.js';
import { HttpError } from './errors.js';

export function messageRoutes(deps: { sql: Sql }) {
  const app = new Hono();

  // 200 on every call, the first and any repeat: each erases whatever is there and is audited.
  app.post('/:id/expunge', async (c) => {
    const id = c.req.param('id');
    const result = await expungeMessage(deps.sql, id, actorOf(c));
    if (!result) throw new HttpError(404, 'message_not_found', `message ${id} not found`);
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
