/**
 * API keys: creation (the key shown once, only its SHA-256 stored), listing, revocation, and the
 * lookup that authentication runs (cached by src/api/auth.ts). The admin token is the row
 * `key_admin` with scope `admin`, kept in step with the configured token by ensureAdminKey().
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Executor, Sql } from '../db/connect.js';
import { newId } from '../ids.js';
import type { Scope } from './scope.js';

export const ADMIN_KEY_ID = 'key_admin';
export const KEY_PREFIX = 'hpk_';
/** How much of a key is kept in clear to recognise it in a list: `hpk_` and 8 characters. */
const SHOWN_PREFIX_LENGTH = 12;

export type KeyKind = 'key' | 'admin' | 'portal';

export interface ApiKey {
  id: string;
  name: string;
  kind: KeyKind;
  prefix: string;
  scopes: Scope[];
  tenant_id: string | null;
  rate_limit_per_second: number | null;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const KEY_COLUMNS = `id, name, kind, prefix, scopes, tenant_id, rate_limit_per_second, expires_at, created_by,
  created_at, last_used_at, revoked_at`;

/** SHA-256 of a key: what the table stores and what a request's token is looked up by. */
export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export interface NewKey {
  name: string;
  scopes: Scope[];
  tenantId?: string | null | undefined;
  expiresAt?: Date | null | undefined;
  rateLimitPerSecond?: number | null | undefined;
  kind?: KeyKind;
  createdBy?: string | undefined;
}

/** Creates a key; the returned `key` is the only time its secret part exists outside the caller. */
export async function createKey(sql: Executor, input: NewKey): Promise<{ apiKey: ApiKey; key: string }> {
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = newId('key_');
  const [row] = await sql<ApiKey[]>`
    WITH created AS (
      INSERT INTO api_keys (id, name, kind, prefix, key_hash, scopes, tenant_id, rate_limit_per_second,
                            expires_at, created_by)
      VALUES (${id}, ${input.name}, ${input.kind ?? 'key'}, ${key.slice(0, SHOWN_PREFIX_LENGTH)},
              ${hashKey(key)}, ${input.scopes}, ${input.tenantId ?? null}, ${input.rateLimitPerSecond ?? null},
              ${input.expiresAt ?? null}, ${input.createdBy ?? null})
      RETURNING ${sql.unsafe(KEY_COLUMNS)}
    ),
    bucket AS (
      -- A limited key starts with a full bucket: one second's worth of items, at least one
      -- (burstOf in rate-limit.ts).
      INSERT INTO api_key_buckets (key_id, tokens)
      SELECT id, greatest(rate_limit_per_second, 1) FROM created WHERE rate_limit_per_second IS NOT NULL
    )
    SELECT * FROM created`;
  return { apiKey: row!, key };
}

/**
 * Makes `key_admin` hold the configured admin token's hash. Run once per process before the
 * first admin request is served; concurrent processes write the same row, which is harmless.
 */
export async function ensureAdminKey(sql: Sql, token: string): Promise<void> {
  await sql`
    INSERT INTO api_keys (id, name, kind, prefix, key_hash, scopes)
    VALUES (${ADMIN_KEY_ID}, 'admin', 'admin', 'HOOKPOST_ADMIN_TOKEN', ${hashKey(token)}, '{admin}')
    ON CONFLICT (id) DO UPDATE SET key_hash = excluded.key_hash, revoked_at = NULL
      WHERE api_keys.key_hash <> excluded.key_hash OR api_keys.revoked_at IS NOT NULL`;
}

/** The key that authenticates as `hash`, whatever its state (the caller checks revocation and expiry). */
export async function findKeyByHash(sql: Sql, hash: Buffer): Promise<ApiKey | undefined> {
  const [row] = await sql<ApiKey[]>`
    SELECT ${sql.unsafe(KEY_COLUMNS)} FROM api_keys WHERE key_hash = ${hash}`;
  return row;
}

/** Keys in creation order (keyset by id), revoked ones included (they show `revoked_at`). */
export async function listKeys(
  sql: Sql,
  options: { limit: number; cursor?: string | undefined; includePortal?: boolean },
): Promise<ApiKey[]> {
  return sql<ApiKey[]>`
    SELECT ${sql.unsafe(KEY_COLUMNS)} FROM api_keys
    WHERE id > ${options.cursor ?? ''} ${options.includePortal ? sql`` : sql`AND kind <> 'portal'`}
    ORDER BY id LIMIT ${options.limit}`;
}

/** Revokes a key; false when there is no such live key. Takes effect on every process within 2 s. */
export async function revokeKey(sql: Sql, id: string): Promise<ApiKey | undefined> {
  const [row] = await sql<ApiKey[]>`
    UPDATE api_keys SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL
    RETURNING ${sql.unsafe(KEY_COLUMNS)}`;
  return row;
}

/** Revokes every live key bound to the tenant, portal sessions included; returns how many. */
export async function revokeTenantKeys(sql: Executor, tenantId: string): Promise<number> {
  const rows = await sql`
    UPDATE api_keys SET revoked_at = now() WHERE tenant_id = ${tenantId} AND revoked_at IS NULL RETURNING id`;
  return rows.length;
}

/**
 * Records use, at most once a minute per key across all processes: the condition makes a second
 * process's write within the minute a no-op, and auth.ts only calls it once a minute per process.
 */
export async function touchKey(sql: Sql, id: string): Promise<void> {
  await sql`
    UPDATE api_keys SET last_used_at = now()
    WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`;
}
