import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, unlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { type EmbeddedDatabase, embeddedUrl, startEmbeddedPostgres } from '../../src/db/embedded.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/** Connects with `password` and answers the SQLSTATE of the failure, or 'ok'. */
async function tryPassword(port: number, password: string): Promise<string> {
  const sql = postgres(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`, {
    max: 1,
    onnotice: () => {},
  });
  try {
    await sql`SELECT 1`;
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  } finally {
    await sql.end({ timeout: 5 });
  }
}

describe('embedded PostgreSQL: a generated password in the data dir', () => {
  let dir: string;
  let port: number;
  let db: EmbeddedDatabase | undefined;
  const start = () =>
    startEmbeddedPostgres({ dataDir: dir, port, settings: { fsync: 'off', max_connections: '20' } });

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-pw-test-'));
    await chmod(dir, 0o755); // run as root, the server is the `postgres` user and must enter it
    port = await freePort();
  });
  after(async () => {
    await db?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('generates the password at first start, keeps it with mode 0600 and refuses the old one', async () => {
    db = await start();
    const file = path.join(dir, 'pg-password');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const password = (await readFile(file, 'utf8')).trim();
    assert.ok(password.length >= 32 && password !== 'postgres');
    assert.equal(new URL(db.url).password, password);
    assert.equal(db.passwordMigrated, false);
    assert.equal(await tryPassword(port, password), 'ok');
    assert.equal(await tryPassword(port, 'postgres'), '28P01', 'the old fixed password no longer works');
    assert.equal(await embeddedUrl(dir, port), db.url, 'a second process finds the same URL');
  });

  it('moves a data dir made with the old fixed password to a generated one, once', async () => {
    // What an older hookpost left behind: a cluster with password "postgres" and no password file.
    const sql = postgres(db!.url, { max: 1, onnotice: () => {} });
    await sql`ALTER ROLE postgres PASSWORD 'postgres'`;
    await sql.end();
    await db!.stop();
    await unlink(path.join(dir, 'pg-password'));

    db = await start();
    assert.equal(db.passwordMigrated, true);
    const password = (await readFile(path.join(dir, 'pg-password'), 'utf8')).trim();
    assert.notEqual(password, 'postgres');
    assert.equal(await tryPassword(port, password), 'ok');
    assert.equal(await tryPassword(port, 'postgres'), '28P01');

    await db.stop();
    db = await start();
    assert.equal(db.passwordMigrated, false, 'the next start uses the saved password as it is');
    assert.equal(new URL(db.url).password, password);
  });
});
