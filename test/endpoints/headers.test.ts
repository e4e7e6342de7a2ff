import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

const KEY = 'headers-test-key-0123456789';

describe('custom endpoint headers: sealed at rest, masked in the API, merged by PATCH', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
  });
  after(() => db.drop());

  async function create(headers: Record<string, string>) {
    const res = await t.send('POST', '/v1/endpoints', { url: 'https://h.example/', headers });
    assert.equal(res.status, 201);
    return res.json();
  }

  it('stores each value sealed and shows only names and a masked tail', async () => {
    const created = await create({ Authorization: 'Bearer sk_live_abcdef12', 'X-Short': 'acme' });
    assert.deepEqual(created.headers, { Authorization: '••••••ef12', 'X-Short': '••••••' });
    const [row] = await db.sql<{ headers: Record<string, string> }[]>`
      SELECT headers FROM endpoints WHERE id = ${created.id}`;
    assert.deepEqual(Object.keys(row!.headers).sort(), ['Authorization', 'X-Short']);
    for (const value of Object.values(row!.headers)) assert.match(value, /^v2:[0-9a-f]{12}:/);
    assert.ok(!JSON.stringify(row).includes('sk_live'), 'no plaintext at rest');

    const fetched = await (await t.send('GET', `/v1/endpoints/${created.id}`)).json();
    assert.deepEqual(fetched.headers, created.headers);
    const list = await (await t.send('GET', '/v1/endpoints?limit=100')).json();
    const listed = list.data.find((e: { id: string }) => e.id === created.id);
    assert.deepEqual(listed.headers, created.headers);
    assert.ok(!JSON.stringify(list).includes('sk_live'));
  });

  it('PATCH sets, removes and keeps headers by name; a masked value keeps the stored one', async () => {
    const created = await create({ Authorization: 'Bearer one-1111111111', 'X-Team': 'billing-team-x' });
    // GET, change one, send everything back: the masked value of the other keeps it.
    const patched = await (
      await t.send('PATCH', `/v1/endpoints/${created.id}`, {
        headers: { ...created.headers, 'X-Team': 'payments-team-y' },
      })
    ).json();
    assert.deepEqual(patched.headers, { Authorization: '••••••1111', 'X-Team': '••••••am-y' });

    const removed = await (
      await t.send('PATCH', `/v1/endpoints/${created.id}`, { headers: { 'x-team': null, 'X-New': 'v' } })
    ).json();
    assert.deepEqual(
      removed.headers,
      { Authorization: '••••••1111', 'X-New': '••••••' },
      'names match case-insensitively',
    );

    const described = await (
      await t.send('PATCH', `/v1/endpoints/${created.id}`, { description: 'd' })
    ).json();
    assert.deepEqual(described.headers, removed.headers, 'a PATCH without headers keeps them');

    const masked = await t.send('PATCH', `/v1/endpoints/${created.id}`, { headers: { 'X-Other': '••••••' } });
    assert.equal(masked.status, 400);
    const problem = await masked.json();
    assert.equal(problem.error.code, 'validation_failed');
    assert.match(problem.error.message, /^headers\.X-Other: is a masked value/);

    const many = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`X-H${i}`, 'v']));
    const tooMany = await t.send('PATCH', `/v1/endpoints/${created.id}`, { headers: many });
    assert.equal(tooMany.status, 400, '2 kept + 49 new is over the limit of 50');

    const cleared = await (await t.send('PATCH', `/v1/endpoints/${created.id}`, { headers: null })).json();
    assert.deepEqual(cleared.headers, {});
  });

  it('shows a header that no configured key opens as the bare mask, not a 500', async () => {
    const created = await create({ Authorization: 'Bearer some-long-token' });
    const other = await createTestApp(db, { HOOKPOST_SECRET_KEY: 'an-entirely-different-key' });
    const res = await other.send('GET', `/v1/endpoints/${created.id}`);
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).headers, { Authorization: '••••••' });
  });

  it('refuses to change the signature scheme after creation', async () => {
    const created = await create({});
    const res = await t.send('PATCH', `/v1/endpoints/${created.id}`, { signature_scheme: 'v1a' });
    assert.equal(res.status, 400);
  });
});
