/**
 * Keys across real `hookpost api` processes on one database: a revocation is refused by the
 * other process within 2 s; the per-key rate limit holds within 10% across both; and the key
 * itself is found nowhere in the database or in either process's log, only its hash.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { freePort, type HookpostProcess, runHookpost, UNUSED_DATA_DIR } from '../cli/process.js';
import { createTestDatabase, type TestDatabase, TOKEN, waitFor } from '../helpers.js';

describe('API keys across two API processes', () => {
  let db: TestDatabase;
  const apis: { proc: HookpostProcess; base: string }[] = [];

  const call = async (base: string, method: string, path: string, body?: unknown, token = TOKEN) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by assertions
    return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as any };
  };

  before(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const proc = runHookpost(['api'], {
        DATABASE_URL: db.url,
        PORT: String(port),
        HOOKPOST_ADMIN_TOKEN: TOKEN,
        HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
        HOOKPOST_DATA_DIR: UNUSED_DATA_DIR,
        // Everything a process could log, so the check below would see a key if one leaked.
        LOG_LEVEL: 'trace',
      });
      const base = `http://127.0.0.1:${port}`;
      apis.push({ proc, base });
      await waitFor(
        'the API to listen',
        () =>
          fetch(`${base}/healthz`).then(
            (r) => r.ok,
            () => false,
          ),
        30000,
      );
    }
  });
  after(async () => {
    for (const api of apis) await api.proc.stop();
    await db.drop();
  });

  it('a key revoked on one process is refused by the other within 2 s', async () => {
    const [one, two] = apis as [(typeof apis)[0], (typeof apis)[0]];
    const created = await call(one.base, 'POST', '/v1/api-keys', {
      name: 'to revoke',
      scopes: ['endpoints:read'],
    });
    assert.equal(created.status, 201);
    const key = created.body.key as string;
    assert.equal((await call(two.base, 'GET', '/v1/endpoints', undefined, key)).status, 200, 'works on both');
    const revokedAt = Date.now();
    assert.equal((await call(one.base, 'DELETE', `/v1/api-keys/${created.body.id}`)).status, 200);
    let refusedAfter = Number.POSITIVE_INFINITY;
    while (Date.now() - revokedAt < 5000) {
      if ((await call(two.base, 'GET', '/v1/endpoints', undefined, key)).status === 401) {
        refusedAfter = Date.now() - revokedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(refusedAfter < 2000, `the other process refused the key after ${refusedAfter} ms`);
  });

  it('a tenant deleted on one process: its key and portal session are refused by the other within 2 s', async () => {
    const [one, two] = apis as [(typeof apis)[0], (typeof apis)[0]];
    assert.equal((await call(one.base, 'PUT', '/v1/tenants/closing', {})).status, 201);
    const key = (
      await call(one.base, 'POST', '/v1/api-keys', {
        name: 'k',
        scopes: ['endpoints:read'],
        tenant_id: 'closing',
      })
    ).body.key as string;
    const session = (await call(one.base, 'POST', '/v1/tenants/closing/portal-sessions', {})).body
      .token as string;
    for (const token of [key, session]) {
      assert.equal((await call(two.base, 'GET', '/v1/endpoints', undefined, token)).status, 200, 'works');
    }
    const deletedAt = Date.now();
    assert.equal((await call(one.base, 'DELETE', '/v1/tenants/closing')).status, 200);
    const refusedAfter = async (token: string) => {
      while (Date.now() - deletedAt < 5000) {
        if ((await call(two.base, 'GET', '/v1/endpoints', undefined, token)).status === 401)
          return Date.now() - deletedAt;
        await new Promise((r) => setTimeout(r, 50));
      }
      return Number.POSITIVE_INFINITY;
    };
    const [keyMs, sessionMs] = await Promise.all([refusedAfter(key), refusedAfter(session)]);
    assert.ok(keyMs < 2000, `the other process refused the key after ${keyMs} ms`);
    assert.ok(sessionMs < 2000, `the other process refused the portal session after ${sessionMs} ms`);
  });

  it('holds a per-key rate limit within 10% across both processes, counted in items', async () => {
    const rate = 50;
    const created = await call(apis[0]!.base, 'POST', '/v1/api-keys', {
      name: 'limited producer',
      scopes: ['deliveries:write'],
      tenant_id: 'limited',
      rate_limit_per_second: rate,
    });
    const key = created.body.key as string;
    const items = Array.from({ length: 5 }, (_, i) => ({ event_type: 'rate.test', payload: { i } }));
    let firstRefusal = 0;
    let acceptedAfter = 0;
    let retryAfter: string | null = null;
    const measureMs = 4000;
    const worker = async (base: string) => {
      for (;;) {
        const res = await call(base, 'POST', '/v1/deliveries/batch', { items }, key);
        const at = Date.now();
        if (firstRefusal !== 0 && at - firstRefusal > measureMs) return;
        if (res.status === 429) {
          if (firstRefusal === 0) firstRefusal = at;
          retryAfter = res.headers.get('retry-after');
          await new Promise((r) => setTimeout(r, 5));
        } else {
          assert.equal(res.status, 202);
          if (firstRefusal !== 0) acceptedAfter += items.length;
        }
      }
    };
    // Two producers per process, all on one key.
    await Promise.all(apis.flatMap((api) => [worker(api.base), worker(api.base)]));
    assert.ok(retryAfter !== null && Number(retryAfter) >= 1, 'a 429 carries Retry-After');
    const measured = acceptedAfter / (measureMs / 1000);
    assert.ok(
      Math.abs(measured - rate) <= rate * 0.1,
      `accepted ${measured} items/s with a limit of ${rate}`,
    );
  });

  it('stores only the hash: the key is nowhere in the database or the logs', async () => {
    const created = await call(apis[1]!.base, 'POST', '/v1/api-keys', { name: 'secret', scopes: ['replay'] });
    const key = created.body.key as string;
    await call(apis[0]!.base, 'GET', '/v1/deliveries/nope', undefined, key);
    await call(apis[0]!.base, 'DELETE', `/v1/api-keys/${created.body.id}`);
    const tables = await db.sql<{ name: string }[]>`
      SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'`;
    for (const { name } of tables) {
      const [hit] = await db.sql.unsafe(`SELECT count(*)::int AS n FROM ${name} t WHERE t::text LIKE $1`, [
        `%${key.slice(4)}%`,
      ]);
      assert.equal(hit!.n, 0, `the key is in table ${name}`);
    }
    const hash = createHash('sha256').update(key).digest();
    const [row] = await db.sql`SELECT count(*)::int AS n FROM api_keys WHERE key_hash = ${hash}`;
    assert.equal(row!.n, 1, 'its hash is what is stored');
    for (const api of apis) assert.ok(!api.proc.output().includes(key.slice(4)), 'the key is in a log');
    assert.ok(!apis.some((a) => a.proc.output().includes(TOKEN)), 'the admin token is in a log');
  });
});
