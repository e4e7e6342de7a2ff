import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { connect } from '../../src/db/connect.js';
import { migrate, readiness, readMigrations } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers.js';

describe('migrate', () => {
  it('is safe when several processes migrate at once: each file applied once', async () => {
    const db = await createTestDatabase(false);
    const pools = [connect(db.url, { max: 2 }), connect(db.url, { max: 2 }), connect(db.url, { max: 2 })];
    try {
      const results = await Promise.all(pools.map((p) => migrate(p)));
      const files = await readMigrations();
      assert.deepEqual(
        results.flat().sort(),
        files.map((f) => f.name).sort(),
        'every file applied by exactly one migrator',
      );
      const rows = await db.sql`SELECT version FROM schema_migrations ORDER BY version`;
      assert.deepEqual(
        rows.map((r) => r.version),
        files.map((f) => f.version),
      );
      assert.deepEqual(await migrate(db.sql), [], 'a second run applies nothing');
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await db.drop();
    }
  });

  it('refuses gaps in the numbering and rolls back a failing file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hp-mig-'));
    try {
      await writeFile(path.join(dir, '0001_a.sql'), 'CREATE TABLE a (x int);');
      await writeFile(path.join(dir, '0003_c.sql'), 'CREATE TABLE c (x int);');
      await assert.rejects(readMigrations(dir), /gap/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const good = await mkdtemp(path.join(os.tmpdir(), 'hp-mig-'));
    await writeFile(path.join(good, '0001_a.sql'), 'CREATE TABLE a (x int);');
    await writeFile(path.join(good, '0002_b.sql'), 'CREATE TABLE b (x int); SELECT no_such_function();');
    const db = await createTestDatabase(false);
    try {
      await assert.rejects(migrate(db.sql, good), /0002_b\.sql failed/);
      const tables = await db.sql`SELECT tablename FROM pg_tables WHERE tablename IN ('a', 'b') ORDER BY 1`;
      assert.deepEqual(
        tables.map((t) => t.tablename),
        ['a'],
        'the failed file left nothing behind',
      );
    } finally {
      await db.drop();
      await rm(good, { recursive: true, force: true });
    }
  });
  it('readiness: a session that cannot write answers read_only and is closed, so the next check is on a new one', async () => {
    const db = await createTestDatabase(true);
    const expected = (await readMigrations()).length;
    // One connection: what the pool hands the next check is that session or a new one.
    const pool = connect(db.url, { max: 1 });
    try {
      assert.equal(await readiness(pool, expected), 'ready');
      assert.equal(await readiness(pool, expected + 1), 'not_ready', 'a migration missing');
      // The session turns read-only, as one left on a standby behind a single-host URL.
      await pool`SET default_transaction_read_only = on`;
      const [before] = await pool<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      assert.equal(await readiness(pool, expected), 'read_only');
      assert.equal(await readiness(pool, expected), 'ready', 'the read-only session was not kept');
      const [after] = await pool<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      assert.notEqual(after?.pid, before?.pid);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});
