/**
 * /v1/messages: the events log a partner reconciles against (GET, oldest first, keyset-paginated,
 * payload bytes as accepted) and the erasure of one message's payload (POST …/expunge).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { listMessages, type MessageLogRow } from '../deliveries/message-log.js';
import { expungeMessage } from '../retention/expunge.js';
import { narrowScope } from '../tenants/scope.js';
import { jsonSyntaxErrorAt } from '../util/raw-json.js';
import { type ApiEnv, callerOf } from './auth.js';
import { validate } from './body.js';
import { notFound } from './errors.js';
import { expungeSchema, messagePageSchema } from './openapi/messages-responses.js';
import { documentRoute } from './openapi/registry.js';
import { pageCursor, pageLimit } from './pagination.js';
import { pgTimestampSchema } from './validation.js';

export const messageLogQuery = z.object({
  tenant_id: z
    .string()
    .optional()
    .meta({ description: "a tenant-bound key sees only its own; another tenant's id gives an empty page" }),
  event_type: z.string().min(1).max(255).optional(),
  since: pgTimestampSchema.optional().meta({ description: 'accepted at or after (inclusive)' }),
  until: pgTimestampSchema.optional().meta({ description: 'accepted before (exclusive)' }),
  order: z.enum(['asc', 'desc']).optional().meta({ description: 'asc (default): oldest first' }),
  limit: z
    .string()
    .optional()
    .meta({ description: '1 to 500, default 50; a page also stops at 4 MiB of payloads' }),
  cursor: z.string().optional().meta({ description: 'next_cursor of the previous page' }),
});

documentRoute({
  method: 'get',
  path: '/v1/messages',
  operationId: 'listMessages',
  tag: 'messages',
  summary: "The events log: the tenant's messages with their payloads, oldest first (keyset-paginated)",
  description:
    'For reconciliation: pull what you may have missed and deduplicate by `id` (the `webhook-id` of every ' +
    'delivery of the message). `since`/`until` compare the time the message was accepted, which its id ' +
    'carries. `payload` is the JSON exactly as accepted, byte for byte; `null` with `payload_expired: true` ' +
    'once the payload was erased.',
  query: messageLogQuery,
  responses: { 200: { description: 'a page of messages', schema: messagePageSchema } },
});

documentRoute({
  method: 'post',
  path: '/v1/messages/{id}/expunge',
  operationId: 'expungeMessage',
  tag: 'messages',
  summary: "Erase a message's payload and its attempts' response snippets now (an erasure request)",
  description: 'Metadata stays; a later replay of its deliveries is 409 payload_expired. Repeatable.',
  params: z.object({ id: z.string().meta({ description: 'message id (msg_…)' }) }),
  responses: { 200: { description: 'erased (also on a repeat)', schema: expungeSchema } },
  errors: [404],
});

/**
 * One message as JSON with its payload spliced in as the stored text, not re-serialised: a
 * parse and stringify would change number formats, escapes and whitespace, and the partner
 * verifies signatures over the exact bytes. The stored text passed JSON.parse at enqueue; it is
 * checked again so that a damaged row can never break the page's JSON.
 */
function messageJson(row: MessageLogRow): string {
  const text = row.payload_expired ? '' : row.payload.toString('utf8');
  const raw = text !== '' && jsonSyntaxErrorAt(text) === -1 ? text.trim() : 'null';
  const meta = JSON.stringify({
    id: row.id,
    tenant_id: row.tenant_id,
    event_type: row.event_type,
    event_id: row.event_id,
    ordering_key: row.ordering_key,
    created_at: row.created_at,
    payload_expired: row.payload_expired,
  });
  return `${meta.slice(0, -1)},"payload":${raw}}`;
}

export function messageRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();

  app.get('/', async (c) => {
    const query = validate(messageLogQuery, c.req.query());
    const limit = pageLimit(query.limit);
    const cursor = pageCursor(query.cursor, 'msg_');
    const scope = narrowScope(callerOf(c), query.tenant_id);
    const json = (body: string) => c.body(body, 200, { 'content-type': 'application/json' });
    if (!scope) return json('{"data":[],"next_cursor":null}');
    const { rows, hasMore } = await listMessages(deps.sql, scope, {
      eventType: query.event_type,
      since: query.since,
      until: query.until,
      cursor,
      order: query.order ?? 'asc',
      limit,
    });
    // With nothing more, next_cursor is null: a job polling the log keeps the last id it saw and
    // passes it as the cursor again later (new messages come after it).
    const next = hasMore ? (rows.at(-1)?.id ?? null) : null;
    return json(`{"data":[${rows.map(messageJson).join(',')}],"next_cursor":${JSON.stringify(next)}}`);
  });

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
