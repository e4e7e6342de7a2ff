import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('/v1/endpoints', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  it('creates an endpoint with a whsec_ secret shown once', async () => {
    const res = await t.send('POST', '/v1/endpoints', {
      url: 'https://partner.example/hooks',
      event_types: ['order.created'],
      rate_limit_per_second: 50,
      max_in_flight: 3,
      headers: { 'X-Partner': 'acme' },
      metadata: { team: 'billing' },
    });
    assert.equal(res.status, 201);
    const body = await res.json();
    assert.match(body.id, /^ep_[0-9a-f]{32}$/);
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(Buffer.from(body.secret.slice(6), 'base64').length, 24);
    assert.deepEqual(body.event_types, ['order.created']);
    assert.equal(body.max_in_flight, 3);
    const fetched = await (await t.send('GET', `/v1/endpoints/${body.id}`)).json();
    assert.equal(fetched.url, 'https://partner.example/hooks');
    assert.equal(fetched.secret, undefined, 'the secret is not shown again');
    const [row] = await db.sql`SELECT secret FROM endpoint_secrets WHERE endpoint_id = ${body.id}`;
    assert.ok(row, 'the secret is stored');
  });

  it('rejects requests without or with a wrong token (401)', async () => {
    const none = await t.request('/v1/endpoints');
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, 'unauthorized');
    const wrong = await t.request('/v1/endpoints', { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.status, 401);
  });

  it('names the offending field in validation errors', async () => {
    const res = await t.send('POST', '/v1/endpoints', { url: 'https://a.example', max_in_flight: -1 });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, 'validation_failed');
    assert.match(body.error.message, /^max_in_flight: /);
    const bad = await t.send('POST', '/v1/endpoints', { url: 'ftp://a.example' });
    assert.match((await bad.json()).error.message, /^url: must use http or https/);
    const unknown = await t.send('POST', '/v1/endpoints', { url: 'https://a.example', colour: 'red' });
    assert.equal(unknown.status, 400);
    const reserved = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example',
      headers: { 'Webhook-Id': 'x' },
    });
    assert.match((await reserved.json()).error.message, /^headers\.Webhook-Id: /);
  });

  it('refuses private targets unless allowed', async () => {
    const strict = await createTestApp(db, { HOOKPOST_ALLOW_PRIVATE_TARGETS: 'false' });
    for (const url of [
      'http://127.0.0.1:9/x',
      'http://localhost/x',
      'http://10.1.2.3/x',
      'http://[::1]/x',
      'http://169.254.169.254/',
    ]) {
      const res = await strict.send('POST', '/v1/endpoints', { url });
      assert.equal(res.status, 400, url);
    }
    assert.equal((await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).status, 201);
  });

  it('answers 415 for a non-JSON body and 400 for broken JSON', async () => {
    const res = await t.send('POST', '/v1/endpoints', 'url=x', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    assert.equal(res.status, 415);
    assert.equal((await res.json()).error.code, 'unsupported_media_type');
    const broken = await t.send('POST', '/v1/endpoints', '{"url": ');
    assert.equal(broken.status, 400);
    assert.equal((await broken.json()).error.code, 'invalid_json');
  });

  it('lists with a cursor, patches, disables, deletes and 404s unknown ids', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (await (await t.send('POST', '/v1/endpoints', { url: `https://list${i}.example/` })).json()).id,
      );
    }
    const all: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await (
        await t.send('GET', `/v1/endpoints?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      all.push(...page.data.map((e: { id: string }) => e.id));
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    for (const id of ids) assert.ok(all.includes(id));
    assert.equal(new Set(all).size, all.length, 'no endpoint appears twice across pages');

    const patched = await (
      await t.send('PATCH', `/v1/endpoints/${ids[0]}`, { description: 'd', enabled: false })
    ).json();
    assert.equal(patched.description, 'd');
    assert.equal(patched.enabled, false);
    assert.equal(patched.disabled_reason, 'disabled by API');
    const reenabled = await (await t.send('PATCH', `/v1/endpoints/${ids[0]}`, { enabled: true })).json();
    assert.equal(reenabled.disabled_reason, null);
    assert.equal(reenabled.url, `https://list0.example/`, 'unpatched fields stay');

    assert.equal((await t.send('DELETE', `/v1/endpoints/${ids[1]}`)).status, 204);
    assert.equal((await t.send('GET', `/v1/endpoints/${ids[1]}`)).status, 404);
    assert.equal((await t.send('DELETE', `/v1/endpoints/${ids[1]}`)).status, 404);
    const missing = await t.send('GET', '/v1/endpoints/ep_nope');
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'endpoint_not_found');
    assert.equal((await t.send('PATCH', '/v1/endpoints/ep_nope', { description: 'x' })).status, 404);
    assert.equal((await t.send('GET', '/v1/endpoints?limit=0')).status, 400);
  });

  it('rotates the secret: old and new both active during the grace period', async () => {
    const created = await (await t.send('POST', '/v1/endpoints', { url: 'https://rotate.example/' })).json();
    const res = await t.send('POST', `/v1/endpoints/${created.id}/rotate-secret`);
    assert.equal(res.status, 200);
    const rotated = await res.json();
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    const rows = await db.sql<{ expires_at: Date | null }[]>`
      SELECT expires_at FROM endpoint_secrets WHERE endpoint_id = ${created.id} ORDER BY created_at`;
    assert.equal(rows.length, 2);
    assert.ok(
      rows[0]!.expires_at && rows[0]!.expires_at.getTime() > Date.now() + 86_000_000,
      'old secret expires in ~24h',
    );
    assert.equal(rows[1]!.expires_at, null, 'new secret does not expire');
    assert.equal((await t.send('POST', '/v1/endpoints/ep_nope/rotate-secret')).status, 404);
  });

  it('encrypts secrets at rest when HOOKPOST_SECRET_KEY is set', async () => {
    const sealed = await createTestApp(db, { HOOKPOST_SECRET_KEY: 'a-long-enough-test-key' });
    const created = await (
      await sealed.send('POST', '/v1/endpoints', { url: 'https://sealed.example/' })
    ).json();
    const [row] = await db.sql<
      { secret: string }[]
    >`SELECT secret FROM endpoint_secrets WHERE endpoint_id = ${created.id}`;
    assert.match(row!.secret, /^v2:[0-9a-f]{12}:/);
    assert.ok(!row!.secret.includes(created.secret.slice(6)));
  });
});
