/**
 * The audit log: who (key id and name) did what to which resource, and when. Rows name fields
 * and ids, never values of secrets, headers or keys. Replays keep their progress in replay_audit;
 * their audit row links to it (resource_id = the replay's `rpl_` id).
 */
import type { Executor, Sql } from '../db/connect.js';
import { newId } from '../ids.js';
import type { Caller, TenantScope } from './scope.js';
import { tenantIs } from './scope.js';

export type AuditAction =
  | 'tenant.created'
  | 'tenant.updated'
  | 'tenant.deleted'
  | 'endpoint.created'
  | 'endpoint.updated'
  | 'endpoint.deleted'
  | 'endpoint.secret_rotated'
  | 'endpoint.circuit_closed'
  | 'api_key.created'
  | 'api_key.revoked'
  | 'event_type.created'
  | 'event_type.updated'
  | 'event_type.deleted'
  | 'replay.started'
  | 'portal_session.created'
  | 'message.expunged';

export interface AuditEntry {
  action: AuditAction;
  resourceType: 'tenant' | 'endpoint' | 'api_key' | 'event_type' | 'replay' | 'portal_session' | 'message';
  resourceId: string;
  tenantId?: string | null | undefined;
  details?: Record<string, unknown>;
}

/** The actor as the audit log names it: a key, or the CLI user for `hookpost` commands. */
export interface Actor {
  keyId: string;
  keyName: string;
}

export function actorOf(caller: Caller): Actor {
  return { keyId: caller.keyId, keyName: caller.keyName };
}

/** Appends one row. */
export async function recordAudit(sql: Executor, actor: Actor, entry: AuditEntry): Promise<void> {
  await sql`
    INSERT INTO audit_log (id, actor_key_id, actor_name, action, resource_type, resource_id, tenant_id, details)
    VALUES (${newId('aud_')}, ${actor.keyId}, ${actor.keyName}, ${entry.action}, ${entry.resourceType},
            ${entry.resourceId}, ${entry.tenantId ?? null}, ${sql.json((entry.details ?? {}) as never)})`;
}

/** What a tenant-bound caller sees in place of a key that is not its own tenant's. */
export const OPERATOR_ACTOR = 'operator';

/**
 * The actor columns of a row as `scope` may see them, named `nameAs` and `keyIdAs`. An unbound
 * caller (the operator) sees every key's name and id. A tenant-bound caller sees its own tenant's
 * keys (its integrations, its portal sessions) by name, and everything else (the admin token,
 * operator keys, the CLI) as "operator" without a key id: the names an operator gives its keys
 * are not the tenant's to read.
 */
export function actorColumns(
  sql: Executor,
  scope: TenantScope,
  columns: { keyId: string; name: string; keyIdAs?: string; nameAs: string },
) {
  const keyId = sql(columns.keyId);
  const name = sql(columns.name);
  const own =
    scope.tenantId === null
      ? sql`true`
      : sql`EXISTS (SELECT 1 FROM api_keys k WHERE k.id = ${keyId} AND k.tenant_id = ${scope.tenantId})`;
  const shownName = sql`CASE WHEN ${own} THEN ${name} ELSE ${OPERATOR_ACTOR} END AS ${sql(columns.nameAs)}`;
  if (columns.keyIdAs === undefined) return shownName;
  return sql`${shownName}, CASE WHEN ${own} THEN ${keyId} END AS ${sql(columns.keyIdAs)}`;
}

export interface AuditRow {
  id: string;
  at: Date;
  /** Null where the caller may not see the key (actorColumns). */
  actor_key_id: string | null;
  actor_name: string;
  action: string;
  resource_type: string;
  resource_id: string;
  tenant_id: string | null;
  details: Record<string, unknown>;
  /** For replays: the progress row (GET /v1/dead-letters/replays/{id}), joined. */
  replay:
    | { kind: 'replay'; state: string; matched: number; replayed: number; skipped: number }
    | { kind: 'resend'; state: string; matched: number; resent: number; skipped: number }
    | null;
}

/** Newest first, keyset by id (ids are time-ordered). */
export async function listAudit(
  sql: Sql,
  scope: TenantScope,
  options: { limit: number; cursor?: string | undefined },
): Promise<AuditRow[]> {
  return sql<AuditRow[]>`
    SELECT a.id, a.at,
      ${actorColumns(sql, scope, { keyId: 'a.actor_key_id', name: 'a.actor_name', keyIdAs: 'actor_key_id', nameAs: 'actor_name' })},
      a.action, a.resource_type, a.resource_id, a.tenant_id, a.details,
      -- A resend shares the replay audit table; its progress says \`resent\`, as its answer does.
      CASE WHEN r.id IS NULL THEN NULL
        WHEN r.filter ->> 'kind' = 'resend' THEN json_build_object('kind', 'resend', 'state', r.state,
          'matched', r.matched, 'resent', r.replayed, 'skipped', r.skipped)
        ELSE json_build_object('kind', 'replay', 'state', r.state, 'matched', r.matched,
          'replayed', r.replayed, 'skipped', r.skipped) END AS replay
    FROM audit_log a LEFT JOIN replay_audit r ON a.resource_type = 'replay' AND r.id = a.resource_id
    WHERE ${options.cursor ? sql`a.id < ${options.cursor}` : sql`true`} AND ${tenantIs(sql, scope, 'a.tenant_id')}
    ORDER BY a.id DESC LIMIT ${options.limit}`;
}
