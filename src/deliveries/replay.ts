/**
 * Replay: putting a dead-lettered (or failed) delivery back in the work queue. The message, and
 * so the payload bytes and the `webhook-id`, are untouched; the attempt log is kept; the retry
 * budget starts afresh, so attempt numbering restarts at 1 (the dispatcher numbers attempts from
 * the queue row's count, and HOOKPOST_MAX_ATTEMPTS applies to each round). Every replay is
 * recorded in replay_audit, and each delivery it requeued in replayed_deliveries, in the same
 * transaction as the requeue. Paced bulk replays: deliveries/bulk-replay.ts.
 */
import type { Executor, Sql } from '../db/connect.js';
import { newId } from '../ids.js';
import { unholdHeads } from '../queue/ordering.js';
import { requeue } from '../queue/requeue.js';
import { wakeDispatchersOnCommit } from '../queue/wakeup.js';
import { type Actor, actorColumns, recordAudit } from '../tenants/audit.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';

/** Why a delivery cannot be replayed; the API maps `kind` to 404, 409 or (too_many_runs) 429. */
export class ReplayError extends Error {
  constructor(
    readonly kind:
      | 'delivery_not_found'
      | 'endpoint_not_found'
      | 'not_replayable'
      | 'endpoint_unavailable'
      | 'payload_expired'
      | 'too_many_runs',
    message: string,
  ) {
    super(message);
  }
}

export type ReplayState = 'running' | 'finished' | 'interrupted' | 'failed';

export interface AuditRow {
  id: string;
  actor: string;
  actor_key_id: string | null;
  tenant_id: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  state: ReplayState;
  filter: Record<string, unknown>;
  dry_run: boolean;
  matched: number;
  replayed: number;
  skipped: number;
}

export interface NewAudit {
  actor: Actor;
  /** The tenant the replay was confined to; null for an admin's replay across tenants. */
  tenantId: string | null;
  filter: Record<string, unknown>;
  dryRun: boolean;
  matched: number;
  replayed: number;
  skipped: number;
  state: ReplayState;
  /** Why, in the caller's words (a resend's `reason`); kept in the audit log. */
  reason?: string | undefined;
  /**
   * The trace of the request that started it (tracing on): every delivery it requeues is sent in
   * that trace, its attempts linked to the message's original one (sql/0018).
   */
  traceparent?: string | null | undefined;
}

/**
 * Writes the replay's progress row and its entry in the audit log (which links to it by id), in
 * the caller's transaction when given one; returns the id (`rpl_…`).
 */
export async function insertAudit(sql: Executor, audit: NewAudit): Promise<string> {
  const id = newId('rpl_');
  await sql`
    INSERT INTO replay_audit (id, actor, actor_key_id, tenant_id, filter, dry_run, matched, replayed, skipped,
                              state, finished_at, traceparent)
    VALUES (${id}, ${audit.actor.keyName}, ${audit.actor.keyId}, ${audit.tenantId},
            ${sql.json(audit.filter as never)}, ${audit.dryRun}, ${audit.matched},
            ${audit.replayed}, ${audit.skipped}, ${audit.state},
            ${audit.state === 'running' ? null : sql`now()`}, ${audit.traceparent ?? null})`;
  await recordAudit(sql, audit.actor, {
    action: 'replay.started',
    resourceType: 'replay',
    resourceId: id,
    tenantId: audit.tenantId,
    details: {
      filter: audit.filter,
      dry_run: audit.dryRun,
      matched: audit.matched,
      ...(audit.reason === undefined ? {} : { reason: audit.reason }),
    },
  });
  return id;
}

/** A replay's progress; undefined when unknown or outside the scope. */
export async function getAudit(sql: Sql, scope: TenantScope, id: string): Promise<AuditRow | undefined> {
  const [row] = await sql<AuditRow[]>`
    SELECT id, ${actorColumns(sql, scope, { keyId: 'actor_key_id', name: 'actor', keyIdAs: 'actor_key_id', nameAs: 'actor' })},
      tenant_id, created_at, updated_at, finished_at, state, filter, dry_run, matched, replayed, skipped
    FROM replay_audit WHERE id = ${id} AND ${tenantIs(sql, scope, 'tenant_id')}`;
  return row;
}

/**
 * Requeues deliveries whose rows the caller has locked (FOR UPDATE) in transaction `tx`: a fresh
 * queue row (a dead letter has none) or, for a failed delivery waiting for its retry, its
 * existing row reset, unless a dispatcher holds its lease right now. `delayMs` spaces them out.
 * One statement; returns the ids actually requeued.
 */
export async function requeueLocked(
  tx: Executor,
  rows: { id: string; delayMs: number }[],
  auditId: string,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const requeued = await tx<{ id: string; endpoint_id: string; ordering_key: string | null }[]>`
    WITH r AS (
      SELECT * FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.delayMs)}::float8[])
        AS t(id, delay_ms)
    ),
    previous AS (
      SELECT d.id, d.endpoint_id, d.message_id, d.status, d.attempt_count, d.dead_at, r.delay_ms,
        CASE WHEN d.sequence IS NOT NULL THEN m.ordering_key END AS ordering_key, d.sequence,
        -- the replay's own trace, kept on its audit row (sql/0018); NULL with tracing off
        (SELECT a.traceparent FROM replay_audit a WHERE a.id = ${auditId}) AS traceparent
      FROM deliveries d JOIN r ON r.id = d.id
      -- Nothing left to send once the payload is erased (retention expiry or expunge). The share
      -- lock makes an expunge under way wait for this requeue (and then cancel it), or this wait
      -- for the expunge's commit and then see the erasure: never a queued row of an erased payload.
      JOIN messages m ON m.id = d.message_id AND m.payload_expired_at IS NULL
      FOR SHARE OF m
    ),
    -- into the queue (src/queue/requeue.ts); a delivery in flight is left alone
    queued AS (${requeue(tx, tx`previous`)}),
    logged AS (
      INSERT INTO replayed_deliveries (audit_id, delivery_id, previous_status, previous_attempt_count, previous_dead_at)
      SELECT ${auditId}, p.id, p.status, p.attempt_count, p.dead_at
      FROM previous p JOIN queued q ON q.delivery_id = p.id
    )
    -- dead_at is cleared: the delivery is no longer a dead letter (the analysis and the next
    -- bulk replay must not count it), and replayed_deliveries keeps when it had died.
    UPDATE deliveries d SET status = 'pending', attempt_count = 0, dead_at = NULL, updated_at = now()
    FROM queued q WHERE d.id = q.delivery_id
    RETURNING d.id, q.endpoint_id, q.ordering_key`;
  // Second statement (fresh snapshot): a replayed keyed delivery whose key has no head becomes it.
  await unholdHeads(
    tx,
    requeued.flatMap((r) =>
      r.ordering_key === null ? [] : [{ endpointId: r.endpoint_id, orderingKey: r.ordering_key }],
    ),
  );
  return requeued.map((r) => r.id);
}

interface ReplayableRow {
  tenant_id: string;
  status: string;
  leased: boolean;
  enabled: boolean;
  deleted: boolean;
  payload_expired: boolean;
}

/**
 * Replays one delivery now: dead_letter, failed (tried at once with a fresh budget) or delivered
 * (a resend, same webhook-id). Refuses, changing nothing, when it is pending, in flight or
 * cancelled, or when its endpoint is disabled or deleted (it could not be sent; re-enable the
 * endpoint first). Returns the audit id.
 */
export async function replayDelivery(
  sql: Sql,
  scope: TenantScope,
  id: string,
  actor: Actor,
  traceparent: string | null = null,
): Promise<string> {
  return sql.begin(async (tx) => {
    const [row] = await tx<ReplayableRow[]>`
      SELECT e.tenant_id, d.status, q.lease_expires_at IS NOT NULL AS leased, e.enabled,
        e.deleted_at IS NOT NULL AS deleted, m.payload_expired_at IS NOT NULL AS payload_expired
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id JOIN messages m ON m.id = d.message_id
      LEFT JOIN delivery_queue q ON q.delivery_id = d.id
      WHERE d.id = ${id} AND ${tenantIs(tx, scope, 'e.tenant_id')}
      FOR UPDATE OF d`;
    if (!row) throw new ReplayError('delivery_not_found', `delivery ${id} not found`);
    if (row.payload_expired) {
      throw new ReplayError('payload_expired', `the payload of delivery ${id} has expired or was expunged`);
    }
    const status = row.leased ? 'in_flight' : row.status;
    // A delivered one is sent again on request (a resend: the receiver lost it after its 2xx).
    if (status !== 'dead_letter' && status !== 'failed' && status !== 'delivered') {
      throw new ReplayError(
        'not_replayable',
        `delivery ${id} is ${status}; only dead_letter, failed and delivered deliveries can be replayed`,
      );
    }
    if (row.deleted || !row.enabled) {
      throw new ReplayError(
        'endpoint_unavailable',
        `the endpoint of delivery ${id} is ${row.deleted ? 'deleted' : 'disabled; enable it before replaying'}`,
      );
    }
    const auditId = await insertAudit(tx, {
      actor,
      tenantId: row.tenant_id,
      filter: { delivery_id: id },
      dryRun: false,
      matched: 1,
      replayed: 1,
      skipped: 0,
      state: 'finished',
      traceparent,
    });
    const requeued = await requeueLocked(tx, [{ id, delayMs: 0 }], auditId);
    // A dispatcher leased the failed delivery between our read and the requeue: it is being
    // sent right now. Throwing rolls the audit row back too.
    if (requeued.length === 0) throw new ReplayError('not_replayable', `delivery ${id} is in_flight`);
    await wakeDispatchersOnCommit(tx);
    return auditId;
  });
}

export interface ReplayRecord {
  audit_id: string;
  actor: string;
  replayed_at: Date;
  previous_status: string;
  previous_attempt_count: number;
  previous_dead_at: Date | null;
}

/**
 * A delivery's replays, oldest first: where each round of attempt numbers began. The caller has
 * already found the delivery in its scope; `scope` decides which actors it may see by name.
 */
export async function listReplaysOf(
  sql: Sql,
  scope: TenantScope,
  deliveryId: string,
): Promise<ReplayRecord[]> {
  return sql<ReplayRecord[]>`
    SELECT r.audit_id,
      ${actorColumns(sql, scope, { keyId: 'a.actor_key_id', name: 'a.actor', nameAs: 'actor' })},
      r.replayed_at, r.previous_status, r.previous_attempt_count, r.previous_dead_at
    FROM replayed_deliveries r JOIN replay_audit a ON a.id = r.audit_id
    WHERE r.delivery_id = ${deliveryId}
    ORDER BY r.replayed_at, r.audit_id`;
}
