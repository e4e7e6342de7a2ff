/**
 * Authentication and scopes for /v1. Every request carries `Authorization: Bearer <key>`; the
 * key is looked up by its SHA-256 (the table holds nothing else of it) and becomes the request's
 * Caller: its id and name for the audit log, its scopes, and its tenant, which every scoped
 * query then applies (src/tenants/scope.ts). The configured admin token is the key `key_admin`.
 *
 * Lookups are cached per process (key-lookup-cache.ts): a found key for one second, so a
 * revocation or expiry reaches every API process within a second (the contract allows 2 s) and a
 * busy key costs one query a second; a token that matched nothing for a minute. A client address
 * that keeps sending unknown tokens is throttled (429) before they cost a lookup each.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import type { Sql } from '../db/connect.js';
import { errorFields, type Logger } from '../log.js';
import {
  ADMIN_KEY_ID,
  type ApiKey,
  ensureAdminKey,
  findKeyByHash,
  hashKey,
  touchKey,
} from '../tenants/keys.js';
import type { Caller, Scope } from '../tenants/scope.js';
import { HttpError } from './errors.js';
import { FailedAuthThrottle, KeyLookupCache } from './key-lookup-cache.js';
import { ANY_KEY, requiredScope } from './route-scopes.js';

/** The Hono environment of every /v1 route: `c.get('caller')` is typed. */
export type ApiEnv = { Variables: { caller: Caller } };

/** The authenticated caller of a /v1 request. */
export function callerOf(c: Context<ApiEnv>): Caller {
  return c.get('caller');
}

/** last_used_at is written at most this often per key. */
const TOUCH_INTERVAL_MS = 60_000;

/** The client's address as the socket says (behind a proxy: the proxy's); in-process tests have none. */
function clientAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'unknown';
}

function bearer(c: Context): string {
  const header = c.req.header('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new HttpError(401, 'unauthorized', 'missing bearer token (Authorization: Bearer <token>)');
  return match[1]!;
}

const ADMIN_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['admin']);

function callerFromKey(key: ApiKey): Caller {
  return {
    keyId: key.id,
    keyName: key.name,
    scopes: new Set(key.scopes),
    tenantId: key.tenant_id,
    // The reserved tenant is the operator's: only an admin key sees it (tenants/scope.ts).
    operations: key.scopes.includes('admin'),
    rateLimitPerSecond: key.rate_limit_per_second,
  };
}

export interface KeyAuthDeps {
  sql: Sql;
  adminToken: string;
  log: Logger;
}

/**
 * The /v1 middleware: authenticates, then checks the route's scope from route-scopes.ts. A /v1
 * path with no rule there answers 404, so a route added without a rule cannot be reached.
 */
export function keyAuth(deps: KeyAuthDeps): MiddlewareHandler<ApiEnv> {
  const adminDigest = hashKey(deps.adminToken);
  const admin: Caller = {
    keyId: ADMIN_KEY_ID,
    keyName: 'admin',
    scopes: ADMIN_SCOPES,
    tenantId: null,
    operations: true,
    rateLimitPerSecond: null,
  };
  let adminRow: Promise<void> | undefined;
  const cache = new KeyLookupCache();
  const failures = new FailedAuthThrottle();
  const touched = new Map<string, number>();

  async function lookup(hash: Buffer, address: string): Promise<ApiKey | undefined> {
    const id = hash.toString('base64');
    const now = Date.now();
    const hit = cache.get(id, now);
    if (hit?.state === 'fresh') return hit.key;
    // A token not known to be a key, from an address over its budget of failures: no lookup.
    const wait = hit?.state === 'stale' ? 0 : failures.blockedForSeconds(address, now);
    if (wait > 0) {
      const headers = { 'retry-after': String(wait) };
      throw new HttpError(
        429,
        'too_many_auth_failures',
        'too many invalid tokens from this address',
        undefined,
        headers,
      );
    }
    if (hit?.state === 'missing') return undefined;
    const key = await findKeyByHash(deps.sql, hash);
    cache.set(id, key, now);
    return key;
  }

  function touch(id: string): void {
    const now = Date.now();
    if (now - (touched.get(id) ?? 0) < TOUCH_INTERVAL_MS) return;
    touched.set(id, now);
    touchKey(deps.sql, id).catch((error: unknown) =>
      deps.log.warn({ keyId: id, ...errorFields(error) }, 'could not record key use'),
    );
  }

  return async (c, next) => {
    const token = bearer(c);
    const hash = hashKey(token);
    let caller: Caller;
    if (timingSafeEqual(hash, adminDigest)) {
      // The admin key's row exists for the audit log and GET /v1/api-keys; written once per process.
      adminRow ??= ensureAdminKey(deps.sql, deps.adminToken).catch((error) => {
        adminRow = undefined;
        throw error;
      });
      await adminRow;
      caller = admin;
    } else {
      const address = clientAddress(c);
      const key = await lookup(hash, address);
      if (!key || key.kind === 'admin') {
        failures.recordFailure(address, Date.now());
        throw new HttpError(401, 'unauthorized', 'invalid token');
      }
      if (key.revoked_at !== null) throw new HttpError(401, 'unauthorized', 'this key has been revoked');
      if (key.expires_at !== null && key.expires_at.getTime() <= Date.now()) {
        throw new HttpError(401, 'unauthorized', 'this key has expired');
      }
      caller = callerFromKey(key);
      touch(key.id);
    }
    const scope = requiredScope(c.req.method, c.req.path);
    if (scope === undefined) {
      throw new HttpError(404, 'not_found', `no route for ${c.req.method} ${c.req.path}`);
    }
    if (scope !== ANY_KEY && !caller.scopes.has('admin') && !caller.scopes.has(scope)) {
      throw new HttpError(403, 'forbidden', `this key lacks the scope ${scope}`, { required_scope: scope });
    }
    c.set('caller', caller);
    await next();
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** A single fixed bearer token (the optional /metrics token), compared in constant time. */
export function fixedTokenAuth(token: string): MiddlewareHandler {
  const expected = digest(token);
  return async (c, next) => {
    if (!timingSafeEqual(digest(bearer(c)), expected))
      throw new HttpError(401, 'unauthorized', 'invalid token');
    await next();
  };
}
