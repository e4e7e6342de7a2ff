import assert from 'node:assert/strict';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { resealStoredSecrets } from '../../src/endpoints/reseal.js';
import { createSecretBox, keyId, SecretUnavailableError } from '../../src/endpoints/secrets.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

const OLD_KEY = 'old-key-0123456789abcdef';
const NEW_KEY = 'new-key-0123456789abcdef';

/** A value sealed the way hookpost did before key ids existed (`v1:`). */
function legacySeal(key: string, value: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(key).digest(), iv);
  const sealed = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
}

describe('secret keys: key ids, previous keys, re-encryption', () => {
  it('digests a value under the key (the stored name of an OAuth client covers its secret)', () => {
    const value = 'https://bank.example/token\0client\0client-secret\0\0';
    const box = createSecretBox(NEW_KEY);
    assert.equal(box.digest(value), createSecretBox(NEW_KEY).digest(value), 'stable for one key');
    assert.notEqual(box.digest(value), createSecretBox(OLD_KEY).digest(value));
    assert.notEqual(box.digest(value), box.digest(`${value}x`));
    // Without the key, nobody who reads the digest can test guesses of the value.
    const plain = (v: string) => createHash('sha256').update(v).digest('hex');
    assert.notEqual(box.digest(value), plain(value));
    assert.notEqual(box.digest(value), plain(`hookpost digest\0${value}`));
  });

  it('stores the key id with each sealed value and opens it with a previous key', () => {
    const old = createSecretBox(OLD_KEY);
    const sealed = old.seal('whsec_abc');
    assert.equal(sealed.split(':')[1], keyId(OLD_KEY));
    assert.ok(!sealed.includes('whsec_abc'));

    const rotated = createSecretBox(NEW_KEY, [OLD_KEY]);
    assert.equal(rotated.open(sealed), 'whsec_abc');
    assert.equal(rotated.isCurrent(sealed), false, 'sealed under the old key: due for re-encryption');
    assert.equal(rotated.isCurrent(rotated.seal('x')), true);
    assert.equal(rotated.open(legacySeal(OLD_KEY, 'legacy')), 'legacy', 'v1: values have no key id');
    assert.equal(rotated.open('plain:p'), 'p');
    assert.equal(rotated.isCurrent('plain:p'), false);

    const without = createSecretBox(NEW_KEY);
    assert.throws(
      () => without.open(sealed),
      (e: unknown) => e instanceof SecretUnavailableError && e.keyId === keyId(OLD_KEY),
    );
    assert.throws(() => without.open(legacySeal(OLD_KEY, 'x')), SecretUnavailableError);
    const error = (() => {
      try {
        without.open(sealed);
      } catch (e) {
        return (e as Error).message;
      }
    })();
    assert.ok(!error?.includes(OLD_KEY) && !error?.includes('whsec_abc'), 'no key or secret in the message');
  });

  it('reads HOOKPOST_SECRET_KEY_PREVIOUS as comma-separated keys and refuses bad values', () => {
    const config = loadConfig({
      HOOKPOST_SECRET_KEY: NEW_KEY,
      HOOKPOST_SECRET_KEY_PREVIOUS: `${OLD_KEY}, ${'z'.repeat(16)}`,
    });
    assert.deepEqual(config.secretKeyPrevious, [OLD_KEY, 'z'.repeat(16)]);
    assert.deepEqual(loadConfig({}).secretKeyPrevious, []);
    assert.throws(() => loadConfig({ HOOKPOST_SECRET_KEY_PREVIOUS: OLD_KEY }), ConfigError);
    assert.throws(
      () => loadConfig({ HOOKPOST_SECRET_KEY: NEW_KEY, HOOKPOST_SECRET_KEY_PREVIOUS: 'short' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        /HOOKPOST_SECRET_KEY_PREVIOUS/.test(e.message) &&
        !/short/.test(e.message),
    );
  });

  describe('re-encryption under the current key', () => {
    let db: TestDatabase;
    before(async () => {
      db = await createTestDatabase();
    });
    after(() => db.drop());

    it('moves plain, previous-key and legacy values to the current key, leaves unopenable ones', async () => {
      const plainApp = await createTestApp(db);
      const plain = await (
        await plainApp.send('POST', '/v1/endpoints', {
          url: 'https://plain.example/',
          headers: { Authorization: 'Bearer plain-token-1234' },
        })
      ).json();
      const oldApp = await createTestApp(db, { HOOKPOST_SECRET_KEY: OLD_KEY });
      const old = await (await oldApp.send('POST', '/v1/endpoints', { url: 'https://old.example/' })).json();
      const lost = await (await createTestApp(db, { HOOKPOST_SECRET_KEY: 'a-key-nobody-has-any-more' })).send(
        'POST',
        '/v1/endpoints',
        { url: 'https://lost.example/' },
      );
      const lostId = (await lost.json()).id;
      const legacyId = (
        await (await plainApp.send('POST', '/v1/endpoints', { url: 'https://legacy.example/' })).json()
      ).id;
      await db.sql`UPDATE endpoint_secrets SET secret = ${legacySeal(OLD_KEY, 'whsec_legacy')} WHERE endpoint_id = ${legacyId}`;

      const box = createSecretBox(NEW_KEY, [OLD_KEY]);
      const result = await resealStoredSecrets(db.sql, box);
      assert.equal(result.unavailable, 1, 'the secret under a key nobody configured is counted');
      assert.ok(result.resealed >= 4, `resealed ${result.resealed}`);

      const rows = await db.sql<{ endpoint_id: string; secret: string }[]>`
        SELECT endpoint_id, secret FROM endpoint_secrets
        WHERE endpoint_id IN ${db.sql([plain.id, old.id, lostId, legacyId])}`;
      const byId = new Map(rows.map((r) => [r.endpoint_id, r.secret]));
      for (const id of [plain.id, old.id, legacyId]) assert.ok(box.isCurrent(byId.get(id)!), id);
      assert.equal(box.open(byId.get(plain.id)!), plain.secret, 'same secret, now sealed');
      assert.equal(box.open(byId.get(old.id)!), old.secret);
      assert.equal(box.open(byId.get(legacyId)!), 'whsec_legacy');
      assert.ok(!box.isCurrent(byId.get(lostId)!), 'left as it was');

      const [headers] = await db.sql<{ headers: Record<string, string> }[]>`
        SELECT headers FROM endpoints WHERE id = ${plain.id}`;
      assert.ok(box.isCurrent(headers!.headers.Authorization!), 'the plain header value is sealed now');
      assert.equal(box.open(headers!.headers.Authorization!), 'Bearer plain-token-1234');

      const again = await resealStoredSecrets(db.sql, box);
      assert.deepEqual(again, { resealed: 0, unavailable: 1 }, 'a second pass has nothing left to do');
    });
  });
});
