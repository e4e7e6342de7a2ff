/** Tenant rows: create or update by the caller's own id, read with counts, list, soft delete. */
import type { Executor, Sql } from '../db/connect.js';
import { deleteEndpoints } from '../endpoints/lifecycle.js';
import { revokeTenantKeys } from './keys.js';
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

/** Which of `ids` name a deleted tenant (one index probe each; no lock). */
export async function deletedTenants(sql: Executor, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  // One tenant (every request of a tenant-bound key) as a plain equality: PostgreSQL planned the
  // = ANY form anew on every call (~100 µs, more than the probe), and caches this one's plan.
  const rows =
    ids.length === 1
      ? await sql<{ id: string }[]>`SELECT id FROM tenants WHERE id = ${ids[0]!} AND deleted_at IS NOT NULL`
      : await sql<{ id: string }[]>`
    SELECT id FROM tenants WHERE id = ANY(${ids}::text[]) AND deleted_at IS NOT NULL ORDER BY id`;
  return rows.map((r) => r.id);
}

/**
 * For a write that adds to a tenant (an endpoint create), inside its transaction: creates the
 * tenant when it does not exist yet and locks its row until commit. A concurrent delete of the
 * tenant (an UPDATE of that row) then waits and finds what this transaction adds, or committed
 * first and is seen here: `deleted`, and the caller adds nothing. Concurrent adds to one tenant
 * queue on the lock, so a count taken under it (a cap) cannot be raced past.
 */
export async function lockTenant(tx: Executor, id: string): Promise<'live' | 'deleted'> {
  await tx`INSERT INTO tenants (id) VALUES (${id}) ON CONFLICT (id) DO NOTHING`;
  const [row] = await tx<{ deleted: boolean }[]>`
    SELECT deleted_at IS NOT NULL AS deleted FROM tenants WHERE id = ${id} FOR UPDATE`;
  return row!.deleted ? 'deleted' : 'live';
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
 * Deletes a tenant: its endpoints are soft-deleted and their waiting deliveries cancelled, and
 * its API keys and portal sessions revoked, in one transaction; the delivery history stays.
 * Returns how many of each, or undefined when unknown. Deliveries in flight finish their attempt;
 * the engine's completion handles a deleted endpoint. The keys stay revoked if the tenant is
 * brought back (a PUT): whoever held them had access to the tenant that was deleted.
 */
export async function deleteTenant(
  sql: Sql,
  scope: TenantScope,
  id: string,
): Promise<{ endpoints: number; cancelled: number; keysRevoked: number } | undefined> {
  return sql.begin(async (tx) => {
    const [tenant] = await tx`
      UPDATE tenants SET deleted_at = now(), updated_at = now()
      WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'id')} RETURNING id`;
    if (!tenant) return undefined;
    // The endpoints' lifecycle transition: soft-deleted, their waiting deliveries cancelled.
    const { ids, cancelled } = await deleteEndpoints(tx, tx`tenant_id = ${id}`);
    // Seen by every API process within a second: their key caches last that long (api/auth.ts).
    const keysRevoked = await revokeTenantKeys(tx, id);
    return { endpoints: ids.length, cancelled, keysRevoked };
  });
}
