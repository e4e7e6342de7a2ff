import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { connect } from '../../src/db/connect.js';
import { migrate, readMigrations } from '../../src/db/migrate.js';
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
    await writeFile(path.join(dir, '0001_a.sql'), 'CREATE TABLE a (x int);');
    await writeFile(path.join(dir, '0003_c.sql'), 'CREATE TABLE c (x int);');
    await assert.rejects(readMigrations(dir), /gap/);

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
    }
  });
});
