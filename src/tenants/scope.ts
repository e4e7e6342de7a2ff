/**
 * The caller's scope: which tenant a request may see and change. Every query that reads or
 * changes endpoints, deliveries, dead letters, replays or the pipeline takes a TenantScope and
 * applies it with tenantIs(); routes never filter by tenant themselves. A key bound to a tenant
 * has `tenantId` set; an unbound key (the admin token, internal services) sees every tenant,
 * except that the reserved tenant `hookpost` exists only for admin keys and hookpost's own
 * commands (`operations`): for every other key its rows are simply not there.
 */
import type { Executor } from '../db/connect.js';

export const SCOPES = [
  'admin',
  'endpoints:read',
  'endpoints:write',
  'deliveries:read',
  'deliveries:write',
  'replay',
] as const;
export type Scope = (typeof SCOPES)[number];

/** The tenant reserved for hookpost's own operational events: only admin keys use it. */
export const OPERATIONS_TENANT = 'hookpost';
export const DEFAULT_TENANT = 'default';
/** The shape of a tenant id (also checked by the tenants table). */
export const TENANT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface TenantScope {
  /** null: every tenant. */
  readonly tenantId: string | null;
  /**
   * Whether the reserved tenant `hookpost` (operational events: its endpoints carry Slack and
   * PagerDuty URLs) is in scope: true for admin keys and the operator's CLI only. Required, so
   * every scope built anywhere has to say.
   */
  readonly operations: boolean;
}

/** Every tenant, the reserved one included: metrics, the operator's CLI. */
export const ALL_TENANTS: TenantScope = Object.freeze({ tenantId: null, operations: true });

/** Who is calling: the authenticated key, as the audit log names it. */
export interface Caller extends TenantScope {
  keyId: string;
  keyName: string;
  scopes: ReadonlySet<Scope>;
  rateLimitPerSecond: number | null;
}

/** No tenant at all (another tenant's id asked for by a bound key): every list is empty. */
export const NO_TENANT: TenantScope = Object.freeze({ tenantId: '', operations: false });

/** True when the scope holds every row (no tenant condition at all): admin and the operator's CLI. */
export function isUnrestricted(scope: TenantScope): boolean {
  return scope.tenantId === null && scope.operations;
}

/**
 * The SQL condition "this row's tenant column is in scope", for a column such as `e.tenant_id`.
 * For an unrestricted scope it is `true`, which the planner folds away; an unbound key without
 * `operations` gets every tenant but the reserved one (IS DISTINCT FROM: a NULL tenant, as on an
 * admin's replay across tenants, is not the reserved one); a scope naming the reserved tenant
 * without `operations` matches nothing.
 */
export function tenantIs(sql: Executor, scope: TenantScope, column: string) {
  if (scope.tenantId === null) {
    return scope.operations ? sql`true` : sql`${sql(column)} IS DISTINCT FROM ${OPERATIONS_TENANT}`;
  }
  if (scope.tenantId === OPERATIONS_TENANT && !scope.operations) return sql`false`;
  return sql`${sql(column)} = ${scope.tenantId}`;
}

/**
 * A request's own `tenant_id` filter narrowed by the caller's scope: the scope to query with, or
 * undefined when the two name different tenants (then nothing is visible: an empty list).
 */
export function narrowScope(scope: TenantScope, requested: string | undefined): TenantScope | undefined {
  if (requested === undefined) return scope;
  if (scope.tenantId !== null && scope.tenantId !== requested) return undefined;
  return { tenantId: requested, operations: scope.operations };
}
