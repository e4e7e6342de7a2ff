/** `hookpost api-keys create|list|revoke`, run as real processes straight against the database. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';
import { runHookpost, UNUSED_DATA_DIR } from './process.js';

describe('hookpost api-keys', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let env: Record<string, string>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    env = { DATABASE_URL: db.url, HOOKPOST_DATA_DIR: UNUSED_DATA_DIR };
  });
  after(async () => {
    await db.drop();
  });

  const run = async (...args: string[]) => {
    const p = runHookpost(['api-keys', ...args], env);
    const code = await p.exited;
    return { code, out: p.output() };
  };

  it('creates a key shown once, lists it without the key, revokes it', async () => {
    const created = await run(
      'create',
      '--name',
      'ci',
      '--scope',
      'deliveries:read',
      '--scope',
      'replay',
      '--tenant',
      'cli_t',
      '--expires',
      '30d',
    );
    assert.equal(created.code, 0, created.out);
    const key = /^(hpk_\S+)$/m.exec(created.out)?.[1];
    const id = /created (key_\w+)/.exec(created.out)?.[1];
    assert.ok(key && id, created.out);
    assert.equal(
      (await t.send('GET', '/v1/deliveries', undefined, { authorization: `Bearer ${key}` })).status,
      200,
    );
    const [row] = await db.sql`SELECT tenant_id, scopes, expires_at FROM api_keys WHERE id = ${id}`;
    assert.equal(row!.tenant_id, 'cli_t');
    assert.deepEqual(row!.scopes, ['deliveries:read', 'replay']);
    assert.ok(Math.abs(row!.expires_at.getTime() - Date.now() - 30 * 86_400_000) < 60_000);

    const listed = await run('list');
    assert.equal(listed.code, 0);
    assert.match(listed.out, new RegExp(`${id}\\s+ci\\s+${key.slice(0, 12)}`));
    assert.ok(!listed.out.includes(key), 'the key is never listed');

    const revoked = await run('revoke', id);
    assert.equal(revoked.code, 0, revoked.out);
    const [state] = await db.sql`SELECT revoked_at FROM api_keys WHERE id = ${id}`;
    assert.ok(state!.revoked_at);
    const [audit] = await db.sql`SELECT count(*)::int AS n FROM audit_log WHERE resource_id = ${id}`;
    assert.equal(audit!.n, 2, 'created and revoked are audited');
    assert.equal((await run('revoke', id)).code, 1, 'revoking twice fails');
  });

  it('refuses bad usage with exit code 2', async () => {
    for (const args of [
      ['create', '--scope', 'replay'],
      ['create', '--name', 'x'],
      ['create', '--name', 'x', '--scope', 'root'],
      ['create', '--name', 'x', '--scope', 'admin', '--tenant', 't'],
      ['create', '--name', 'x', '--scope', 'replay', '--expires', 'soon'],
      ['revoke'],
      ['frobnicate'],
    ]) {
      assert.equal((await run(...args)).code, 2, args.join(' '));
    }
  });
});
