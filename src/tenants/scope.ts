/**
 * The caller's scope: which tenant a request may see and change. Every query that reads or
 * changes endpoints, deliveries, dead letters, replays or the pipeline takes a TenantScope and
 * applies it with tenantIs(); routes never filter by tenant themselves. A key bound to a tenant
 * has `tenantId` set; an unbound key (the admin token, internal services) sees every tenant.
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
}

export const ALL_TENANTS: TenantScope = Object.freeze({ tenantId: null });

/** Who is calling: the authenticated key, as the audit log names it. */
export interface Caller extends TenantScope {
  keyId: string;
  keyName: string;
  scopes: ReadonlySet<Scope>;
  rateLimitPerSecond: number | null;
}

/** True when the caller holds `scope` (admin holds all). */
export function hasScope(caller: Caller, scope: Scope): boolean {
  return caller.scopes.has('admin') || caller.scopes.has(scope);
}

/**
 * The SQL condition "this row's tenant column is in scope", for a column such as `e.tenant_id`.
 * For an unbound scope it is `true`, which the planner folds away.
 */
export function tenantIs(sql: Executor, scope: TenantScope, column: string) {
  return scope.tenantId === null ? sql`true` : sql`${sql(column)} = ${scope.tenantId}`;
}

/**
 * A request's own `tenant_id` filter narrowed by the caller's scope: the scope to query with, or
 * undefined when the two name different tenants (then nothing is visible: an empty list).
 */
export function narrowScope(scope: TenantScope, requested: string | undefined): TenantScope | undefined {
  if (requested === undefined) return scope;
  if (scope.tenantId !== null && scope.tenantId !== requested) return undefined;
  return { tenantId: requested };
}
