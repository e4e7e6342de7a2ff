/**
 * The claim's generic plan is made once, with the queue's size of that moment: made on a
 * near-empty queue it joined the rows it locked back to the queue by scanning the whole table, in
 * every later claim. The dispatcher's claim pool pins it to index and TID lookups
 * (src/dispatch/pools.ts, lookupPlans).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { closeDispatcherPools, type DispatcherPools, openDispatcherPools } from '../../src/dispatch/pools.js';
import { claimDue, createTestApp, createTestDatabase, enqueueMany, type TestDatabase } from '../helpers.js';

describe('claim plans', () => {
  let db: TestDatabase;
  let pools: DispatcherPools;
  let generic: Sql;
  before(async () => {
    db = await createTestDatabase();
    pools = openDispatcherPools(db.url);
    // The control: one connection, so that its one cached plan is the one made first.
    generic = connect(db.url, { max: 1, genericPlans: true });
  });
  after(async () => {
    await Promise.all([closeDispatcherPools(pools), generic.end()]);
    await db.drop();
  });

  const options = { limit: 1, leaseSeconds: 60, saturated: [], perEndpointLimit: 1, limitedEndpoints: false };

  /**
   * One claim, and the queue rows it read by sequential scan: counted by its own backend, inside
   * a transaction on a reserved connection (pg_stat_xact_user_tables is per backend and exact).
   */
  const claimScanning = async (pool: Sql) => {
    const conn = await pool.reserve();
    const seqRead = async () => {
      const [row] = await conn<{ n: number }[]>`
        SELECT coalesce(sum(seq_tup_read), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'delivery_queue'`;
      return row!.n;
    };
    try {
      await conn`BEGIN`;
      const before = await seqRead();
      const claimed = await claimDue(conn, options);
      const scanned = (await seqRead()) - before;
      await conn`COMMIT`;
      return { claimed: claimed.length, scanned };
    } finally {
      conn.release();
    }
  };

  it("the dispatcher's claims read only what they claim once the queue has grown", async () => {
    const t = await createTestApp(db);
    const ep = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json())
      .id as string;
    await enqueueMany(t.send, ep, 4);
    // Both connections claim first while the queue holds a few rows, as a dispatcher that starts
    // on a quiet system does.
    assert.equal((await claimScanning(pools.claimSql)).claimed, 1);
    assert.equal((await claimScanning(generic)).claimed, 1);
    // Then a backlog builds up: 20,000 rows parked behind an endpoint that does not exist.
    await db.sql`
      INSERT INTO delivery_queue (delivery_id, endpoint_id, message_id, state)
      SELECT 'dlv_backlog' || g, 'ep_backlog', 'msg_backlog' || g, 'parked' FROM generate_series(1, 20000) g`;

    const planned = await claimScanning(pools.claimSql);
    assert.equal(planned.claimed, 1);
    assert.ok(planned.scanned < 1000, `a claim planned now scanned ${planned.scanned} queue rows`);
    // The plan made once on the near-empty queue is what the claim pool avoids.
    const cached = await claimScanning(generic);
    assert.equal(cached.claimed, 1);
    assert.ok(cached.scanned >= 20000, `the cached generic plan scanned only ${cached.scanned} rows`);
  });
});
