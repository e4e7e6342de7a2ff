import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resealStoredSecrets } from '../../src/endpoints/reseal.js';
import { createSecretBox } from '../../src/endpoints/secrets.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

const KEY = 'credentials-test-key-0123456789';
const NEXT_KEY = 'credentials-test-key-next-98765';

const basic = { type: 'basic', username: 'acme', password: 'basic-password-SECRET1' };
const legacy = {
  header: 'X-Legacy-Signature',
  secret: 'legacy-secret-SECRET2',
  encoding: 'hex',
  prefix: 'sha256=',
  content: 'timestamp.body',
  timestamp_header: 'X-Legacy-Timestamp',
};
const SECRETS = ['SECRET1', 'SECRET2', 'SECRET3'];

describe('endpoint credentials: sealed at rest, masked on reads, dropped on a new origin', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
  });
  after(() => db.drop());

  async function create(extra: Record<string, unknown>) {
    const res = await t.send('POST', '/v1/endpoints', { url: 'https://old.example/hook', ...extra });
    assert.equal(res.status, 201, await res.clone().text());
    return res.json();
  }

  function assertNoSecret(text: string, what: string) {
    for (const secret of SECRETS) assert.ok(!text.includes(secret), `${what} shows ${secret}`);
  }

  it('seals password and legacy secret at rest and masks them on every read', async () => {
    const created = await create({ auth: basic, legacy_signature: legacy });
    assert.deepEqual(created.auth, { ...basic, password: '••••••RET1' });
    assert.deepEqual(created.legacy_signature, { ...legacy, secret: '••••••RET2' });
    const [row] = await db.sql`SELECT auth, legacy_signature FROM endpoints WHERE id = ${created.id}`;
    assert.match(row!.auth.password, /^v2:[0-9a-f]{12}:/);
    assert.match(row!.legacy_signature.secret, /^v2:[0-9a-f]{12}:/);
    assertNoSecret(JSON.stringify(row), 'the stored row');
    assert.equal(row!.auth.username, 'acme', 'what is not secret stays readable');
    const read = await (await t.send('GET', `/v1/endpoints/${created.id}`)).text();
    const list = await (await t.send('GET', '/v1/endpoints?limit=100')).text();
    assertNoSecret(read + list, 'a read');
    const audit = await db.sql`SELECT details FROM audit_log WHERE resource_id = ${created.id}`;
    assertNoSecret(JSON.stringify(audit), 'the audit log');
  });

  it('keeps the stored secret when a read is sent back masked, replaces it when a new one is sent', async () => {
    const created = await create({ auth: basic, legacy_signature: legacy });
    const read = await (await t.send('GET', `/v1/endpoints/${created.id}`)).json();
    const patched = await t.send('PATCH', `/v1/endpoints/${created.id}`, {
      auth: { ...read.auth, username: 'acme-2' },
      legacy_signature: read.legacy_signature,
    });
    assert.equal(patched.status, 200);
    const box = createSecretBox(KEY);
    const [kept] = await db.sql`SELECT auth, legacy_signature FROM endpoints WHERE id = ${created.id}`;
    assert.equal(kept!.auth.username, 'acme-2');
    assert.equal(box.open(kept!.auth.password), basic.password);
    assert.equal(box.open(kept!.legacy_signature.secret), legacy.secret);

    await t.send('PATCH', `/v1/endpoints/${created.id}`, {
      auth: { ...basic, password: 'new-pass-SECRET3' },
    });
    const [changed] = await db.sql`SELECT auth FROM endpoints WHERE id = ${created.id}`;
    assert.equal(box.open(changed!.auth.password), 'new-pass-SECRET3');

    const cleared = await (
      await t.send('PATCH', `/v1/endpoints/${created.id}`, { auth: null, legacy_signature: null })
    ).json();
    assert.equal(cleared.auth, null);
    assert.equal(cleared.legacy_signature, null);
  });

  it('refuses a masked secret with nothing stored, and conflicting headers, with a 400 naming the field', async () => {
    const masked = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      auth: { ...basic, password: '••••••RET1' },
    });
    assert.equal(masked.status, 400);
    assert.match((await masked.json()).error.message, /^auth\.password: is a masked value/);
    const both = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      auth: basic,
      headers: { Authorization: 'Bearer x-123456789' },
    });
    assert.match(
      (await both.json()).error.message,
      /^headers\.Authorization: cannot be set together with auth/,
    );
    const clash = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      legacy_signature: legacy,
      headers: { 'x-legacy-signature': 'x' },
    });
    assert.match((await clash.json()).error.message, /^legacy_signature\.header: is also a custom header/);
    const reserved = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      legacy_signature: { ...legacy, header: 'Webhook-Signature' },
    });
    assert.match((await reserved.json()).error.message, /^legacy_signature\.header: is set by hookpost/);
    // The same reserved names as custom headers (undici refuses to send Expect or Keep-Alive at all),
    // and a masked-looking value only where a masked value keeps a stored secret.
    for (const [body, message] of [
      [
        { legacy_signature: { ...legacy, header: 'Expect' } },
        /^legacy_signature\.header: is set by hookpost/,
      ],
      [
        { legacy_signature: { ...legacy, header: 'keep-alive' } },
        /^legacy_signature\.header: is set by hookpost/,
      ],
      [{ legacy_signature: { ...legacy, prefix: '••••••sha=' } }, /^legacy_signature\.prefix: /],
      [{ auth: { ...basic, username: '••••••acme' } }, /^auth\.username: /],
    ] as const) {
      const refused = await t.send('POST', '/v1/endpoints', { url: 'https://a.example/', ...body });
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.match((await refused.json()).error.message, message);
    }
    const colon = await t.send('POST', '/v1/endpoints', {
      url: 'https://a.example/',
      auth: { ...basic, username: 'a:b' },
    });
    assert.equal(colon.status, 400);
    const nothing = await db.sql`SELECT 1 FROM endpoints WHERE url = 'https://a.example/'`;
    assert.equal(nothing.length, 0, 'nothing half written');
  });

  it('repointing to another origin drops header values, auth and legacy secret unless the PATCH supplies them', async () => {
    const created = await create({
      auth: basic,
      legacy_signature: legacy,
      headers: { 'X-Api-Key': 'header-value-SECRET3' },
    });
    const samePlace = await (
      await t.send('PATCH', `/v1/endpoints/${created.id}`, { url: 'https://old.example/other-path' })
    ).json();
    assert.ok(samePlace.auth, 'a new path on the same origin keeps them');
    assert.deepEqual(Object.keys(samePlace.headers), ['X-Api-Key']);

    const moved = await t.send('PATCH', `/v1/endpoints/${created.id}`, { url: 'https://new.example/hook' });
    assert.equal(moved.status, 200);
    const body = await moved.json();
    assert.equal(body.auth, null);
    assert.equal(body.legacy_signature, null);
    assert.deepEqual(body.headers, {});
    const [row] =
      await db.sql`SELECT auth, legacy_signature, headers FROM endpoints WHERE id = ${created.id}`;
    assert.equal(row!.auth, null);
    assert.deepEqual(row!.headers, {});
    const [audit] = await db.sql`
      SELECT details FROM audit_log WHERE resource_id = ${created.id} ORDER BY id DESC LIMIT 1`;
    assert.deepEqual(audit!.details.dropped_credentials, ['headers', 'auth', 'legacy_signature']);

    // Back on a third origin with a masked value: nothing is stored for it any more.
    const again = await create({ auth: basic, headers: { 'X-Api-Key': 'header-value-SECRET3' } });
    const read = await (await t.send('GET', `/v1/endpoints/${again.id}`)).json();
    const refused = await t.send('PATCH', `/v1/endpoints/${again.id}`, {
      url: 'https://third.example/',
      auth: read.auth,
    });
    assert.equal(refused.status, 400);
    assert.match((await refused.json()).error.message, /^auth\.password: is a masked value/);
    const supplied = await (
      await t.send('PATCH', `/v1/endpoints/${again.id}`, {
        url: 'https://third.example/',
        auth: { ...basic, password: 'for-the-new-host' },
        headers: { 'X-Api-Key': 'new-host-key-123456' },
      })
    ).json();
    assert.equal(supplied.auth.type, 'basic');
    assert.deepEqual(Object.keys(supplied.headers), ['X-Api-Key']);
    const box = createSecretBox(KEY);
    const [kept] = await db.sql`SELECT auth, headers FROM endpoints WHERE id = ${again.id}`;
    assert.equal(box.open(kept!.auth.password), 'for-the-new-host');
    assert.equal(box.open(kept!.headers['X-Api-Key']), 'new-host-key-123456');
  });

  it('re-seals credentials under a new key', async () => {
    const created = await create({ auth: basic, legacy_signature: legacy });
    const box = createSecretBox(NEXT_KEY, [KEY]);
    const result = await resealStoredSecrets(db.sql, box);
    assert.equal(result.unavailable, 0);
    const [row] = await db.sql`SELECT auth, legacy_signature FROM endpoints WHERE id = ${created.id}`;
    assert.ok(box.isCurrent(row!.auth.password));
    assert.ok(box.isCurrent(row!.legacy_signature.secret));
    assert.equal(box.open(row!.auth.password), basic.password);
    const again = await resealStoredSecrets(db.sql, box);
    assert.equal(again.resealed, 0, 'a second pass has nothing left to do');
  });
});

describe('the endpoint version trigger watches every column the dispatcher caches', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  it('bumps config_version for each column of the sending configuration, and not for others', async () => {
    const t = await createTestApp(db);
    const ep = await (await t.send('POST', '/v1/endpoints', { url: 'https://v.example/' })).json();
    const version = async () =>
      Number((await db.sql`SELECT config_version FROM endpoints WHERE id = ${ep.id}`)[0]!.config_version);
    const changes: [string, string][] = [
      ['url', `'https://w.example/'`],
      ['headers', `'{"x": "plain:y"}'`],
      ['enabled', 'false'],
      ['max_attempts', '3'],
      ['retry_base_seconds', '2'],
      ['retry_cap_seconds', '20'],
      ['auth', `'{"type": "basic", "username": "u", "password": "plain:p"}'`],
      ['tls', `'{"ca_certificates": "x"}'`],
      ['legacy_signature', `'{"header": "x-s", "secret": "plain:s", "encoding": "hex", "content": "body"}'`],
    ];
    for (const [column, value] of changes) {
      const before = await version();
      await db.sql.unsafe(`UPDATE endpoints SET ${column} = ${value} WHERE id = $1`, [ep.id]);
      assert.equal(await version(), before + 1, column);
    }
    const before = await version();
    await db.sql`UPDATE endpoints SET description = 'not sent', certificate_warned_at = now() WHERE id = ${ep.id}`;
    assert.equal(await version(), before, 'a column the dispatcher does not read');
  });
});
