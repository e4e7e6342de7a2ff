/**
 * Erasing one message's payload now (POST /v1/messages/{id}/expunge): the same erasure the
 * payload expiry does after HOOKPOST_PAYLOAD_RETENTION_DAYS, on request. Deliveries of it still
 * waiting are cancelled, since there is nothing left to send; one in flight at that moment
 * finishes its attempt, and then leaves the queue (`cancelled` unless it was delivered, no retry)
 * without a response snippet: whatever the partner echoed back of the payload is not kept.
 */
import type { Sql } from '../db/connect.js';
import { newId } from '../ids.js';
import { cancelExpungedDeliveries } from '../queue/expunge.js';
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
    // The queue's transition (src/queue/expunge.ts): waiting deliveries are cancelled, those in
    // flight marked; it waits for result writes under way, so the erasure below sees them.
    const { cancelled } = await cancelExpungedDeliveries(tx, id);
    const [erased] = await tx<{ snippets: number }[]>`
      WITH snippets AS (
        UPDATE delivery_attempts a SET response_snippet = NULL
        FROM deliveries d
        WHERE d.message_id = ${id} AND a.delivery_id = d.id AND a.response_snippet IS NOT NULL
        RETURNING 1
      )
      SELECT count(*)::int AS snippets FROM snippets`;
    const counts = { cancelled, snippets: erased!.snippets };
    const auditId = newId('exp_');
    await tx`
      INSERT INTO message_expunges (id, message_id, actor, cancelled_deliveries, erased_snippets)
      VALUES (${auditId}, ${id}, ${caller.keyName ?? caller.keyId}, ${counts.cancelled}, ${counts.snippets})`;
    // The general audit log links to the expunge record (no payload in either).
    await recordAudit(tx, actorOf(caller), {
      action: 'message.expunged',
      resourceType: 'message',
      resourceId: id,
      tenantId: message.tenant_id,
      details: {
        expunge_id: auditId,
        cancelled_deliveries: counts.cancelled,
        erased_snippets: counts.snippets,
      },
    });
    return {
      messageId: id,
      payloadExpiredAt: message.payload_expired_at,
      cancelledDeliveries: counts.cancelled,
      erasedSnippets: counts.snippets,
      auditId,
    };
  });
}
