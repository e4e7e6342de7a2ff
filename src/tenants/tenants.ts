/** Tenant rows: create or update by the caller's own id, read with counts, list, soft delete. */
import type { Sql } from '../db/connect.js';
import { type TenantScope, tenantIs } from './scope.js';

export interface Tenant {
  id: string;
  name: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface TenantCounts {
  endpoints: number;
  queued_deliveries: number;
  dead_letters: number;
}

const COLUMNS = 'id, name, metadata, created_at, updated_at';

/**
 * PUT semantics: creates the tenant (or brings a deleted one back) or updates the given fields.
 * `created` tells 201 from 200.
 */
export async function putTenant(
  sql: Sql,
  id: string,
  input: { name?: string | undefined; metadata?: Record<string, unknown> | undefined },
): Promise<{ tenant: Tenant; created: boolean }> {
  const [row] = await sql<(Tenant & { created: boolean })[]>`
    INSERT INTO tenants (id, name, metadata)
    VALUES (${id}, ${input.name ?? ''}, ${sql.json((input.metadata ?? {}) as never)})
    ON CONFLICT (id) DO UPDATE SET
      name = CASE WHEN ${input.name === undefined} AND tenants.deleted_at IS NULL THEN tenants.name ELSE excluded.name END,
      metadata = CASE WHEN ${input.metadata === undefined} AND tenants.deleted_at IS NULL THEN tenants.metadata ELSE excluded.metadata END,
      deleted_at = NULL, updated_at = now(),
      created_at = CASE WHEN tenants.deleted_at IS NULL THEN tenants.created_at ELSE now() END
    RETURNING ${sql.unsafe(COLUMNS)}, (xmax = 0 OR created_at = updated_at) AS created`;
  const { created, ...tenant } = row!;
  return { tenant, created };
}

/**
 * Makes sure the named tenants exist (created, or brought back when deleted), for an endpoint
 * create or an enqueue that names a tenant for the first time. An existing live tenant costs an
 * index probe and no write.
 */
export async function ensureTenants(sql: Sql, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  // Like enqueue's: no ON CONFLICT DO UPDATE, which would lock a live tenant's row.
  await sql`
    WITH revived AS (
      UPDATE tenants SET deleted_at = NULL, updated_at = now(), created_at = now()
      WHERE id = ANY(${ids}::text[]) AND deleted_at IS NOT NULL
    )
    INSERT INTO tenants (id) SELECT DISTINCT unnest(${ids}::text[]) ON CONFLICT (id) DO NOTHING`;
}

/** One tenant with its counts; undefined when unknown, deleted or outside the scope. */
export async function getTenant(
  sql: Sql,
  scope: TenantScope,
  id: string,
): Promise<(Tenant & TenantCounts) | undefined> {
  const [row] = await sql<(Tenant & TenantCounts)[]>`
    SELECT ${sql.unsafe(COLUMNS)},
      (SELECT count(*)::int FROM endpoints e WHERE e.tenant_id = t.id AND e.deleted_at IS NULL) AS endpoints,
      (SELECT count(*)::int FROM delivery_queue q JOIN endpoints e ON e.id = q.endpoint_id
        WHERE e.tenant_id = t.id) AS queued_deliveries,
      (SELECT count(*)::int FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
        WHERE e.tenant_id = t.id AND d.dead_at IS NOT NULL) AS dead_letters
    FROM tenants t
    WHERE t.id = ${id} AND t.deleted_at IS NULL AND ${tenantIs(sql, scope, 't.id')}`;
  return row;
}

/** Keyset page by id. */
export async function listTenants(
  sql: Sql,
  scope: TenantScope,
  options: { limit: number; cursor?: string | undefined },
): Promise<Tenant[]> {
  return sql<Tenant[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM tenants t
    WHERE t.deleted_at IS NULL AND t.id > ${options.cursor ?? ''} AND ${tenantIs(sql, scope, 't.id')}
    ORDER BY t.id LIMIT ${options.limit}`;
}

/**
 * Deletes a tenant: its endpoints are soft-deleted and their waiting deliveries cancelled, in one
 * transaction; the delivery history stays. Returns how many of each, or undefined when unknown.
 * Deliveries in flight finish their attempt; the engine's completion handles a deleted endpoint.
 */
export async function deleteTenant(
  sql: Sql,
  scope: TenantScope,
  id: string,
): Promise<{ endpoints: number; cancelled: number } | undefined> {
  return sql.begin(async (tx) => {
    const [tenant] = await tx`
      UPDATE tenants SET deleted_at = now(), updated_at = now()
      WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'id')} RETURNING id`;
    if (!tenant) return undefined;
    const [counts] = await tx<{ endpoints: number; cancelled: number }[]>`
      WITH gone AS (
        UPDATE endpoints SET deleted_at = now(), enabled = false, disabled_reason = 'deleted', updated_at = now()
        WHERE tenant_id = ${id} AND deleted_at IS NULL RETURNING id
      ),
      dropped AS (
        DELETE FROM delivery_queue WHERE endpoint_id IN (SELECT id FROM gone) AND lease_expires_at IS NULL
        RETURNING delivery_id
      ),
      cancelled AS (
        UPDATE deliveries SET status = 'cancelled', updated_at = now()
        WHERE id IN (SELECT delivery_id FROM dropped) RETURNING id
      )
      SELECT (SELECT count(*)::int FROM gone) AS endpoints, (SELECT count(*)::int FROM cancelled) AS cancelled`;
    return counts!;
  });
}
