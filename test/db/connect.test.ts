/**
 * Pool settings: the dispatcher's pool plans its prepared statements once (generic plans), and
 * its claim and completion work under them; other pools keep PostgreSQL's default.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { completeAttempts } from '../../src/queue/complete.js';
import {
  claimDue,
  createTestApp,
  createTestDatabase,
  deliveredResult,
  enqueueMany,
  type TestDatabase,
} from '../helpers.js';

describe('connect: plan cache mode', () => {
  let db: TestDatabase;
  let generic: Sql;
  before(async () => {
    db = await createTestDatabase();
    generic = connect(db.url, { max: 1, genericPlans: true }); // one connection: pg_prepared_statements is per session
  });
  after(async () => {
    await generic.end();
    await db.drop();
  });

  it('genericPlans sets force_generic_plan; the default pool keeps auto', async () => {
    const [g] = await generic<{ plan_cache_mode: string }[]>`SHOW plan_cache_mode`;
    const [d] = await db.sql<{ plan_cache_mode: string }[]>`SHOW plan_cache_mode`;
    assert.equal(g!.plan_cache_mode, 'force_generic_plan');
    assert.equal(d!.plan_cache_mode, 'auto');
  });

  it('claims and completes under generic plans, the same statement run many times', async () => {
    const t = await createTestApp(db);
    const ep = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json())
      .id as string;
    await enqueueMany(t.send, ep, 40);
    let delivered = 0;
    // Eight rounds: past the five custom plans PostgreSQL's auto mode would make first.
    for (let round = 0; round < 8; round++) {
      const claimed = await claimDue(generic, {
        limit: 5,
        leaseSeconds: 60,
        saturated: [],
        perEndpointLimit: 5,
        limitedEndpoints: false,
      });
      const written = await completeAttempts(
        generic,
        claimed.map((c) => deliveredResult(c, { mayBeLate: false })),
      );
      delivered += written.size;
    }
    assert.equal(delivered, 40);
    const [left] = await db.sql<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep}`;
    assert.equal(left!.n, 0);
    const [stats] = await generic<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_prepared_statements WHERE generic_plans > 0`;
    assert.ok(stats!.n > 0, 'the connection has run generic plans');
  });
});
