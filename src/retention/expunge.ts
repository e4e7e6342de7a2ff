/**
 * Erasing one message's payload now (POST /v1/messages/{id}/expunge): the same erasure the
 * payload expiry does after HOOKPOST_PAYLOAD_RETENTION_DAYS, on request. Deliveries of it still
 * queued are cancelled, since there is nothing left to send; one in flight at that moment
 * finishes its attempt, but its lease is gone, so the result changes nothing and no retry follows.
 */
import type { Sql } from '../db/connect.js';
import { type OrderingKey, releaseHeads } from '../deliveries/ordering.js';
import { newId } from '../ids.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { type Caller, tenantIs } from '../tenants/scope.js';

export interface ExpungeResult {
  messageId: string;
  payloadExpiredAt: Date;
  cancelledDeliveries: number;
  erasedSnippets: number;
  auditId: string;
}

/** Erases the message's payload and its attempts' response snippets; undefined when unknown. */
export async function expungeMessage(
  sql: Sql,
  caller: Caller,
  id: string,
): Promise<ExpungeResult | undefined> {
  return sql.begin(async (tx) => {
    const [message] = await tx<{ payload_expired_at: Date; tenant_id: string }[]>`
      UPDATE messages SET payload = ''::bytea, payload_expired_at = coalesce(payload_expired_at, now())
      WHERE id = ${id} AND ${tenantIs(tx, caller, 'tenant_id')}
      RETURNING payload_expired_at, tenant_id`;
    if (!message) return undefined;
    const [counts] = await tx<{ cancelled: number; snippets: number; keys: OrderingKey[] }[]>`
      WITH unqueued AS (
        DELETE FROM delivery_queue q USING deliveries d
        WHERE d.message_id = ${id} AND q.delivery_id = d.id
        RETURNING q.delivery_id, q.endpoint_id, q.ordering_key
      ),
      cancelled AS (
        UPDATE deliveries d SET status = 'cancelled', updated_at = now()
        FROM unqueued u WHERE d.id = u.delivery_id
        RETURNING d.id
      ),
      snippets AS (
        UPDATE delivery_attempts a SET response_snippet = NULL
        FROM deliveries d
        WHERE d.message_id = ${id} AND a.delivery_id = d.id AND a.response_snippet IS NOT NULL
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM cancelled)::int AS cancelled, (SELECT count(*) FROM snippets)::int AS snippets,
        (SELECT coalesce(json_agg(json_build_object('endpointId', endpoint_id, 'orderingKey', ordering_key)), '[]')
         FROM unqueued WHERE ordering_key IS NOT NULL) AS keys`;
    // A cancelled keyed delivery lets the next one of its key go (deliveries/ordering.ts).
    await releaseHeads(tx, counts!.keys);
    const auditId = newId('exp_');
    await tx`
      INSERT INTO message_expunges (id, message_id, actor, cancelled_deliveries, erased_snippets)
      VALUES (${auditId}, ${id}, ${caller.keyName ?? caller.keyId}, ${counts!.cancelled}, ${counts!.snippets})`;
    // The general audit log links to the expunge record (no payload in either).
    await recordAudit(tx, actorOf(caller), {
      action: 'message.expunged',
      resourceType: 'message',
      resourceId: id,
      tenantId: message.tenant_id,
      details: {
        expunge_id: auditId,
        cancelled_deliveries: counts!.cancelled,
        erased_snippets: counts!.snippets,
      },
    });
    return {
      messageId: id,
      payloadExpiredAt: message.payload_expired_at,
      cancelledDeliveries: counts!.cancelled,
      erasedSnippets: counts!.snippets,
      auditId,
    };
  });
}
