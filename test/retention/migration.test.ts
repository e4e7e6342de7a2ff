/**
 * Migration 0006 on a database that already has an unpartitioned attempt log: every row is kept,
 * the old table becomes a partition without being rewritten, and the first retention pass bounds
 * it and creates the partitions after it. Plus the gap-filling rule for partitions (pure).
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { migrate, SQL_DIR } from '../../src/db/migrate.js';
import { listPartitions, missingRanges } from '../../src/retention/partitions.js';
import { runRetentionPass } from '../../src/retention/pass.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';

const ROWS = 20_000;

describe('migration 0006 from an unpartitioned attempt log', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase(false);
  });
  after(async () => {
    await db.drop();
  });

  it('keeps every row and turns the old table into a partition', async () => {
    // The schema as it was before 0006: migrations up to 0003 only.
    const upTo3 = await mkdtemp(path.join(os.tmpdir(), 'hp-mig-'));
    for (const name of (await readdir(SQL_DIR)).filter((n) => /^000[1-3]_/.test(n))) {
      await copyFile(path.join(SQL_DIR, name), path.join(upTo3, name));
    }
    try {
      assert.equal((await migrate(db.sql, upTo3)).length, 3);
    } finally {
      await rm(upTo3, { recursive: true, force: true });
    }
    await db.sql`
      INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code,
                                     outcome, response_snippet)
      SELECT 'dlv_' || lpad(to_hex(g % 5000), 32, '0'), 'ep_1', g / 5000 + 1,
             now() - interval '3 days' + g * interval '10 seconds', 12, 200, 'success', 'ok'
      FROM generate_series(0, ${ROWS - 1}) g`;
    const [sums] = await db.sql<{ n: number; total: number }[]>`
      SELECT count(*)::int AS n, sum(attempt)::int AS total FROM delivery_attempts`;

    const applied = await migrate(db.sql);
    assert.ok(applied.some((n) => n.startsWith('0006_')));
    const [afterMigration] = await db.sql<{ n: number; total: number }[]>`
      SELECT count(*)::int AS n, sum(attempt)::int AS total FROM delivery_attempts`;
    assert.deepEqual(afterMigration, sums);
    const [kind] = await db.sql<{ relkind: string }[]>`
      SELECT relkind FROM pg_class WHERE relname = 'delivery_attempts'`;
    assert.equal(kind!.relkind, 'p', 'delivery_attempts is now a partitioned table');
    const partitions = await listPartitions(db.sql);
    assert.deepEqual(
      partitions.map((p) => [p.name, p.isDefault]),
      [['delivery_attempts_legacy', true]],
    );
    // Nothing in 0006 builds an index over existing rows: the payload index comes later, concurrently.
    const [payloadIndex] = await db.sql<
      { r: string | null }[]
    >`SELECT to_regclass('messages_payload_live_idx')::text AS r`;
    assert.equal(payloadIndex!.r, null);
    // The old index was adopted by the partitioned one, not rebuilt beside it.
    const [adopted] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_inherits
      WHERE inhparent = 'delivery_attempts_delivery_idx'::regclass
        AND inhrelid = 'delivery_attempts_legacy_delivery_idx'::regclass`;
    assert.equal(adopted!.n, 1);

    // The first pass bounds the old table (a little in the future) and creates partitions after it.
    const outcome = await runRetentionPass(
      db.sql,
      {
        retentionDays: 30,
        payloadRetentionDays: 30,
        partitionIntervalSeconds: 3600,
        partitionsAhead: 2,
        batchSize: 100,
        pauseMs: 0,
      },
      { force: true },
    );
    assert.ok(outcome.ran);
    const bounded = await listPartitions(db.sql);
    const legacy = bounded.find((p) => p.name === 'delivery_attempts_legacy')!;
    assert.equal(legacy.isDefault, false);
    assert.equal(legacy.from, null, 'from MINVALUE');
    assert.ok(legacy.to!.getTime() > Date.now(), 'bounded ahead of now, so no insert is refused meanwhile');
    // Partitions after the old table cover the current slot and the two ahead. How many that takes
    // depends on the clock: near the end of an hour the old table's bound is already the next-but-one
    // boundary (it keeps a margin), and one new partition is enough.
    const step = 3600 * 1000;
    const coveredUntil = Math.max(...bounded.map((p) => p.to?.getTime() ?? 0));
    assert.ok(bounded.length >= 2, 'partitions after the old table');
    assert.ok(
      coveredUntil >= Math.floor(Date.now() / step) * step + 3 * step,
      `partitions cover the slots ahead (until ${new Date(coveredUntil).toISOString()})`,
    );
    const [afterPass] = await db.sql<{ n: number; total: number }[]>`
      SELECT count(*)::int AS n, sum(attempt)::int AS total FROM delivery_attempts`;
    assert.deepEqual(afterPass, sums);

    // New attempts go where their time says: now into the old table, after its bound into a new one.
    const later = new Date(legacy.to!.getTime() + 60_000);
    await db.sql`
      INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, started_at, duration_ms, outcome)
      VALUES ('dlv_now', 'ep_1', 1, now(), 1, 'success'), ('dlv_later', 'ep_1', 1, ${later}, 1, 'success')`;
    const placed = await db.sql<{ delivery_id: string; partition: string }[]>`
      SELECT delivery_id, tableoid::regclass::text AS partition FROM delivery_attempts
      WHERE delivery_id IN ('dlv_now', 'dlv_later') ORDER BY delivery_id`;
    const where = new Map(placed.map((r) => [r.delivery_id, r.partition]));
    assert.equal(where.get('dlv_now'), 'delivery_attempts_legacy');
    assert.match(where.get('dlv_later')!, /^delivery_attempts_p\d{8}_\d{6}$/);
  });
});

describe('missingRanges', () => {
  const at = (s: string) => new Date(`2026-12-01T${s}Z`);
  it('fills the slots from the current one on, around existing partitions', () => {
    const now = at('10:30:00').getTime();
    assert.deepEqual(missingRanges([], now, 3600, 2), [
      { from: at('10:00:00'), to: at('11:00:00') },
      { from: at('11:00:00'), to: at('12:00:00') },
      { from: at('12:00:00'), to: at('13:00:00') },
    ]);
    // The legacy table bounded mid-slot, and one partition already there.
    const existing = [
      { from: null, to: at('10:45:00') },
      { from: at('12:00:00'), to: at('13:00:00') },
    ];
    assert.deepEqual(missingRanges(existing, now, 3600, 2), [
      { from: at('10:45:00'), to: at('11:00:00') },
      { from: at('11:00:00'), to: at('12:00:00') },
    ]);
  });
});
