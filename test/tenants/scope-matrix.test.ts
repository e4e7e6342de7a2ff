/**
 * The scope matrix: a key with one scope reaches exactly the routes of that scope (admin reaches
 * all), and every other route answers 403 naming the scope it lacks. The route table
 * (src/api/route-scopes.ts) must cover exactly the app's /v1 routes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ANY_KEY, ROUTE_SCOPES } from '../../src/api/route-scopes.js';
import { SCOPES } from '../../src/tenants/scope.js';
import { createTestApp, createTestDatabase, keySender, type TestDatabase, waitFor } from '../helpers.js';

describe('scopes', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(async () => {
    await db.drop();
  });

  it('the scope table covers exactly the /v1 routes of the app', () => {
    const routes = t.app.routes
      .filter((r) => r.method !== 'ALL' && r.path.startsWith('/v1/'))
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    assert.deepEqual([...new Set(routes)], ROUTE_SCOPES.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('each scope allows exactly its routes; the others answer 403 naming the missing scope', async () => {
    for (const scope of SCOPES) {
      const key = await keySender(t, { scopes: [scope], name: `only ${scope}` });
      for (const [method, path, required] of ROUTE_SCOPES) {
        // Made-up ids and an empty body: an allowed call fails later (404, 400) but never 401/403.
        const url = path.replace(/:[a-z_]+/g, 'no_such_id');
        const res = await key.send(method, url, method === 'GET' || method === 'DELETE' ? undefined : {});
        const allowed = scope === 'admin' || scope === required || required === ANY_KEY;
        if (allowed) {
          assert.ok(![401, 403].includes(res.status), `${scope} → ${method} ${path}: ${res.status}`);
        } else {
          assert.equal(res.status, 403, `${scope} → ${method} ${path}`);
          const body = await res.json();
          assert.equal(body.error.code, 'forbidden');
          assert.match(body.error.message, new RegExp(required.replace(':', '\\:')));
          assert.equal(body.error.details.required_scope, required);
        }
      }
    }
  });

  it('no token, a wrong token, a revoked and an expired key answer 401', async () => {
    assert.equal((await t.request('/v1/endpoints')).status, 401);
    const wrong = await t.send('GET', '/v1/endpoints', undefined, { authorization: 'Bearer hpk_nope' });
    assert.equal(wrong.status, 401);
    const key = await keySender(t, { scopes: ['endpoints:read'] });
    assert.equal((await key.send('GET', '/v1/endpoints')).status, 200);
    assert.equal((await t.send('DELETE', `/v1/api-keys/${key.id}`)).status, 200);
    // The process caches a lookup for at most a second.
    await new Promise((r) => setTimeout(r, 1100));
    const revoked = await key.send('GET', '/v1/endpoints');
    assert.equal(revoked.status, 401);
    assert.match((await revoked.json()).error.message, /revoked/);

    const soon = await t.send('POST', '/v1/api-keys', {
      name: 'short',
      scopes: ['endpoints:read'],
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    const { key: shortKey } = await soon.json();
    const auth = { authorization: `Bearer ${shortKey}` };
    assert.equal((await t.send('GET', '/v1/endpoints', undefined, auth)).status, 200);
    await new Promise((r) => setTimeout(r, 1600));
    const expired = await t.send('GET', '/v1/endpoints', undefined, auth);
    assert.equal(expired.status, 401);
    assert.match((await expired.json()).error.message, /expired/);
  });

  it('lists keys without key material and records use at most once a minute', async () => {
    const key = await keySender(t, { scopes: ['deliveries:read'], tenant_id: 'lister' });
    await key.send('GET', '/v1/deliveries');
    await key.send('GET', '/v1/deliveries');
    // The use is recorded after the answer (never delaying a request), so it can land a moment later.
    const list = await waitFor('last_used_at written on first use', async () => {
      const page = await (await t.send('GET', '/v1/api-keys?limit=500')).json();
      return page.data.find((k: { id: string; last_used_at: string | null }) => k.id === key.id)?.last_used_at
        ? page
        : undefined;
    });
    const row = list.data.find((k: { id: string }) => k.id === key.id);
    assert.equal(row.tenant_id, 'lister');
    assert.deepEqual(row.scopes, ['deliveries:read']);
    assert.equal(row.prefix, key.key.slice(0, 12));
    assert.ok(row.last_used_at, 'last_used_at written on first use');
    assert.ok(!JSON.stringify(list).includes(key.key), 'the key is never listed');
    assert.ok(!('key_hash' in row));
    assert.ok(
      list.data.some((k: { id: string }) => k.id === 'key_admin'),
      'the admin token is a key too',
    );
    // A second use within the minute does not write again.
    const [first] =
      await db.sql`SELECT last_used_at, xmin::text AS version FROM api_keys WHERE id = ${key.id}`;
    await new Promise((r) => setTimeout(r, 1100));
    await key.send('GET', '/v1/deliveries');
    const [second] =
      await db.sql`SELECT last_used_at, xmin::text AS version FROM api_keys WHERE id = ${key.id}`;
    assert.equal(second!.version, first!.version, 'no second write within a minute');
  });

  it('refuses bad key requests with 400', async () => {
    for (const body of [
      { name: 'x', scopes: [] },
      { name: 'x', scopes: ['root'] },
      { name: 'x', scopes: ['admin'], tenant_id: 'a' },
      { name: 'x', scopes: ['replay'], tenant_id: 'hookpost' },
      { name: 'x', scopes: ['replay'], expires_at: '2000-01-01T00:00:00Z' },
      { name: 'x', scopes: ['replay'], rate_limit_per_second: 0 },
    ]) {
      const res = await t.send('POST', '/v1/api-keys', body);
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    assert.equal((await t.send('DELETE', '/v1/api-keys/key_admin')).status, 409);
    assert.equal((await t.send('DELETE', '/v1/api-keys/key_nope')).status, 404);
  });
});
