/**
 * `hookpost api-keys create|list|revoke`: key management straight to the database, like
 * `migrate` (no API URL or token needed: whoever can reach the database is the operator). The
 * same functions as POST/GET/DELETE /v1/api-keys, and the same audit rows.
 */
import os from 'node:os';
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { type Actor, recordAudit } from '../tenants/audit.js';
import { ADMIN_KEY_ID, type ApiKey, createKey, listKeys, revokeKey } from '../tenants/keys.js';
import { OPERATIONS_TENANT, SCOPES, type Scope, TENANT_ID } from '../tenants/scope.js';
import { lockTenant } from '../tenants/tenants.js';
import { withDatabase } from './database.js';
import { UsageError } from './usage-error.js';

export interface ApiKeysArgs {
  name?: string | undefined;
  scope?: string[] | undefined;
  tenant?: string | undefined;
  expires?: string | undefined;
  'rate-limit'?: string | undefined;
}

const out = (text: string) => process.stdout.write(`${text}\n`);

function cliActor(): Actor {
  let name = 'cli';
  try {
    name = `cli:${os.userInfo().username}`;
  } catch {}
  return { keyId: name, keyName: name };
}

const UNITS: Record<string, number> = { m: 60, h: 3600, d: 86400 };

/** `--expires 30d` (also 12h, 90m, or an ISO 8601 time) → the expiry time. */
export function parseExpiry(raw: string, now: Date): Date {
  const age = /^(\d+)([mhd])$/.exec(raw);
  if (age) return new Date(now.getTime() + Number(age[1]) * UNITS[age[2]!]! * 1000);
  const at = Date.parse(raw);
  if (/^\d{4}-\d{2}-\d{2}/.test(raw) && Number.isFinite(at) && at > now.getTime()) return new Date(at);
  throw new UsageError(`--expires must be an age like 30d, 12h, 90m or a future ISO 8601 time, got ${raw}`);
}

/** Validates `create`'s options; UsageError (exit 2) on anything wrong. */
export function newKeyFromArgs(args: ApiKeysArgs, now: Date) {
  if (!args.name?.trim()) throw new UsageError('--name N is required');
  const scopes = args.scope ?? [];
  if (scopes.length === 0)
    throw new UsageError(`--scope S is required (one or more of: ${SCOPES.join(', ')})`);
  for (const s of scopes) {
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw new UsageError(`--scope ${s} is not a scope (one of: ${SCOPES.join(', ')})`);
    }
  }
  if (args.tenant !== undefined) {
    if (!TENANT_ID.test(args.tenant)) throw new UsageError('--tenant must be 1-128 of A-Za-z0-9._:-');
    if (args.tenant === OPERATIONS_TENANT) throw new UsageError(`--tenant ${OPERATIONS_TENANT} is reserved`);
    if (scopes.includes('admin')) throw new UsageError('a key bound to a tenant cannot have the admin scope');
  }
  let rate: number | null = null;
  if (args['rate-limit'] !== undefined) {
    rate = Number(args['rate-limit']);
    if (!Number.isFinite(rate) || rate <= 0) throw new UsageError('--rate-limit must be a number above 0');
  }
  return {
    name: args.name.trim(),
    scopes: [...new Set(scopes)] as Scope[],
    tenantId: args.tenant ?? null,
    expiresAt: args.expires === undefined ? null : parseExpiry(args.expires, now),
    rateLimitPerSecond: rate,
  };
}

function row(k: ApiKey): string[] {
  const state = k.revoked_at
    ? 'revoked'
    : k.expires_at && k.expires_at.getTime() <= Date.now()
      ? 'expired'
      : 'active';
  const time = (d: Date | null) => (d ? d.toISOString().slice(0, 19).replace('T', ' ') : '-');
  return [
    k.id,
    k.name,
    k.prefix,
    k.scopes.join(','),
    k.tenant_id ?? '*',
    state,
    time(k.last_used_at),
    time(k.expires_at),
  ];
}

async function list(sql: Sql): Promise<void> {
  const header = ['ID', 'NAME', 'PREFIX', 'SCOPES', 'TENANT', 'STATE', 'LAST USED (UTC)', 'EXPIRES (UTC)'];
  const rows: string[][] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await listKeys(sql, { limit: 500, cursor });
    rows.push(...page.map(row));
    if (page.length < 500) break;
    cursor = page.at(-1)!.id;
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [header, ...rows])
    out(
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

export async function runApiKeys(
  config: Config,
  action: string | undefined,
  rest: string[],
  args: ApiKeysArgs,
) {
  const actor = cliActor();
  switch (action) {
    case 'create': {
      const input = newKeyFromArgs(args, new Date());
      const { apiKey, key } = await withDatabase(config, async (sql) => {
        const tenantId = input.tenantId;
        const created = await sql.begin(async (tx) => {
          if (tenantId && (await lockTenant(tx, tenantId)) === 'deleted') {
            throw new UsageError(
              `--tenant ${tenantId}: the tenant is deleted (PUT /v1/tenants/${tenantId} brings it back)`,
            );
          }
          return createKey(tx, { ...input, createdBy: actor.keyId });
        });
        await recordAudit(sql, actor, {
          action: 'api_key.created',
          resourceType: 'api_key',
          resourceId: created.apiKey.id,
          tenantId: created.apiKey.tenant_id,
          details: {
            name: created.apiKey.name,
            scopes: created.apiKey.scopes,
            prefix: created.apiKey.prefix,
          },
        });
        return created;
      });
      out(
        `created ${apiKey.id} (${apiKey.scopes.join(', ')}${apiKey.tenant_id ? `, tenant ${apiKey.tenant_id}` : ''})`,
      );
      out('the key (shown only now; hookpost keeps only its hash):');
      out(key);
      return 0;
    }
    case 'list':
      await withDatabase(config, list);
      return 0;
    case 'revoke': {
      const id = rest[0];
      if (id === undefined || rest.length > 1) throw new UsageError('usage: hookpost api-keys revoke ID');
      if (id === ADMIN_KEY_ID)
        throw new UsageError('the admin token is set by HOOKPOST_ADMIN_TOKEN; change it there');
      const revoked = await withDatabase(config, async (sql) => {
        const key = await revokeKey(sql, id);
        if (key) {
          await recordAudit(sql, actor, {
            action: 'api_key.revoked',
            resourceType: 'api_key',
            resourceId: id,
            tenantId: key.tenant_id,
            details: { name: key.name },
          });
        }
        return key;
      });
      if (!revoked) {
        process.stderr.write(`hookpost: no active key ${id}\n`);
        return 1;
      }
      out(`revoked ${id}: refused by every API process within 2 s`);
      return 0;
    }
    default:
      throw new UsageError('hookpost api-keys create|list|revoke');
  }
}
