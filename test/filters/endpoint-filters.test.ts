/**
 * The `filter` field of endpoints (create, PATCH, null clears, shown on reads; a bad one is a 400
 * with nothing written) and POST /v1/filters/test.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

const EUR_OVER_100 = { data: { currency: 'EUR', amount: { $gt: 100 } } };

describe('endpoint filters', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  const endpointCount = async () =>
    (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM endpoints`)[0]!.n;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  it('is stored on create, shown on reads, changed by PATCH and removed by null', async () => {
    const created = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      filter: EUR_OVER_100,
    });
    assert.equal(created.status, 201);
    const ep = await created.json();
    assert.deepEqual(ep.filter, EUR_OVER_100);
    assert.deepEqual((await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json()).filter, EUR_OVER_100);
    const listed = (await (await t.send('GET', '/v1/endpoints')).json()).data.find(
      (e: { id: string }) => e.id === ep.id,
    );
    assert.deepEqual(listed.filter, EUR_OVER_100);
    const [row] = await db.sql<
      { filter_path: string }[]
    >`SELECT filter_path::text FROM endpoints WHERE id = ${ep.id}`;
    assert.match(row!.filter_path, /jsonb|exists|\$"?\."?data/);

    const changed = await t.send('PATCH', `/v1/endpoints/${ep.id}`, { filter: { type: 'order.paid' } });
    assert.equal(changed.status, 200);
    assert.deepEqual((await changed.json()).filter, { type: 'order.paid' });
    // A PATCH of something else keeps the filter.
    const other = await t.send('PATCH', `/v1/endpoints/${ep.id}`, { description: 'orders' });
    assert.deepEqual((await other.json()).filter, { type: 'order.paid' });

    const cleared = await t.send('PATCH', `/v1/endpoints/${ep.id}`, { filter: null });
    assert.equal((await cleared.json()).filter, null);
    const [gone] = await db.sql`SELECT filter, filter_path FROM endpoints WHERE id = ${ep.id}`;
    assert.deepEqual(gone, { filter: null, filter_path: null });
  });

  it('an endpoint without a filter shows null', async () => {
    const ep = await (await t.send('POST', '/v1/endpoints', { url: 'https://b.example/' })).json();
    assert.equal(ep.filter, null);
  });

  it('refuses a bad filter on create with 400 invalid_filter naming the operator and pointer, writing nothing', async () => {
    const before = await endpointCount();
    const cases: [unknown, string | null, string][] = [
      [{ data: { amount: { $between: [1, 2] } } }, '$between', '/data/amount/$between'],
      [{ amount: { $gt: 'a', $lt: true } }, '$lt', '/amount/$lt'],
      [{ $or: [{ a: 1 }, { b: { $in: 'x' } }] }, '$in', '/$or/1/b/$in'],
      ['order.created', null, ''],
      [[{ a: 1 }], null, ''],
      [{ a: { b: { c: { $exist: 'yes' } } } }, '$exist', '/a/b/c/$exist'],
    ];
    for (const [filter, operator, pointer] of cases) {
      const res = await t.send('POST', '/v1/endpoints', { url: 'https://c.example/', filter });
      assert.equal(res.status, 400, JSON.stringify(filter));
      const { error } = await res.json();
      assert.equal(error.code, 'invalid_filter');
      assert.deepEqual(error.details, { operator, pointer });
      assert.ok(error.message.startsWith(`filter${pointer}: `), error.message);
    }
    assert.equal(await endpointCount(), before);
  });

  it('refuses a filter deeper than 32 levels or over 16 KiB', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const tooDeep = await t.send('POST', '/v1/endpoints', { url: 'https://d.example/', filter: deep });
    assert.equal(tooDeep.status, 400);
    assert.match((await tooDeep.json()).error.message, /deeper than 32 levels/);
    const big = { $or: Array.from({ length: 2000 }, (_, i) => ({ sku: `sku-${i}` })) };
    const tooBig = await t.send('POST', '/v1/endpoints', { url: 'https://d.example/', filter: big });
    assert.equal(tooBig.status, 400);
    const { error } = await tooBig.json();
    assert.equal(error.code, 'invalid_filter');
    assert.match(error.message, /bytes; at most 16384/);
  });

  it('a bad filter in a PATCH changes nothing, the filter or any other field', async () => {
    const ep = await (
      await t.send('POST', '/v1/endpoints', { url: 'https://e.example/', filter: { type: 'a' } })
    ).json();
    const res = await t.send('PATCH', `/v1/endpoints/${ep.id}`, {
      description: 'changed',
      filter: { type: { $regex: '.*' } },
    });
    assert.equal(res.status, 400);
    assert.deepEqual((await res.json()).error.details, { operator: '$regex', pointer: '/type/$regex' });
    const now = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.deepEqual(now.filter, { type: 'a' });
    assert.equal(now.description, '');
  });

  it('keys and strings that look like jsonpath syntax are only keys and strings', async () => {
    const tricky = {
      'a"b': 'x"y',
      'c\\d': '\\',
      'x$.e': { 'last || true': '$' },
      '@': { $in: ['lax', 'strict', ')'] },
      ключ: '☕\u{1F600}\n\t',
    };
    const res = await t.send('POST', '/v1/endpoints', { url: 'https://f.example/', filter: tricky });
    assert.equal(res.status, 201);
    const test = async (payload: unknown) =>
      (await (await t.send('POST', '/v1/filters/test', { filter: tricky, payload })).json()).matches;
    const exact = {
      'a"b': 'x"y',
      'c\\d': '\\',
      'x$.e': { 'last || true': '$' },
      '@': ')',
      ключ: '☕\u{1F600}\n\t',
    };
    assert.equal(await test(exact), true);
    assert.equal(await test({ ...exact, '@': '(' }), false);
    assert.equal(await test({ ...exact, 'a"b': 'x' }), false);
  });

  describe('POST /v1/filters/test', () => {
    const test = (body: unknown) => t.send('POST', '/v1/filters/test', body);

    it('answers whether the payload matches', async () => {
      const yes = await test({ filter: EUR_OVER_100, payload: { data: { currency: 'EUR', amount: 150 } } });
      assert.equal(yes.status, 200);
      assert.deepEqual(await yes.json(), { matches: true });
      const no = await test({ filter: EUR_OVER_100, payload: { data: { currency: 'EUR', amount: 50 } } });
      assert.deepEqual(await no.json(), { matches: false });
      assert.deepEqual(await (await test({ filter: {}, payload: 1 })).json(), { matches: true });
    });

    it('compares the payload as written (numbers beyond a double)', async () => {
      const raw = '{"filter": {"n": {"$gt": 100}}, "payload": {"n": 100.0000000000000001}}';
      assert.deepEqual(await (await test(raw)).json(), { matches: true });
    });

    it('takes payloads jsonb cannot store (NUL, a lone surrogate) as enqueue does', async () => {
      const raw = '{"filter": {"kind": "a"}, "payload": {"kind": "a", "note": "x\\u0000y\\ud800"}}';
      assert.deepEqual(await (await test(raw)).json(), { matches: true });
    });

    it('refuses a bad filter like the endpoint routes', async () => {
      const res = await test({ filter: { a: { $gte: [1] } }, payload: {} });
      assert.equal(res.status, 400);
      const { error } = await res.json();
      assert.equal(error.code, 'invalid_filter');
      assert.deepEqual(error.details, { operator: '$gte', pointer: '/a/$gte' });
    });

    it('needs a payload, and nothing else in the body', async () => {
      assert.equal((await test({ filter: {} })).status, 400);
      assert.equal((await test({ filter: {}, payload: 1, extra: true })).status, 400);
    });

    it('needs endpoints:read, nothing more', async () => {
      const key = async (scopes: string[]) =>
        (
          await (
            await t.send('POST', '/v1/api-keys', { name: scopes.join(' '), scopes, tenant_id: 'acme' })
          ).json()
        ).key as string;
      const body = JSON.stringify({ filter: { a: 1 }, payload: { a: 1 } });
      const as = (token: string) =>
        t.request('/v1/filters/test', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        });
      assert.equal((await as(await key(['endpoints:read']))).status, 200);
      const refused = await as(await key(['deliveries:write']));
      assert.equal(refused.status, 403);
      assert.match((await refused.json()).error.message, /endpoints:read/);
    });
  });
});
