/**
 * Real dispatcher processes against one database: sharing a backlog, dying with kill -9, and
 * stopping on SIGTERM. Every delivery must arrive (at least once), none twice while leases hold.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runHookpost, UNUSED_DATA_DIR } from '../cli/process.js';
import {
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('dispatcher processes', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let receiver: Receiver;
  let delay = 0;
  let env: Record<string, string>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    receiver = await startReceiver((_req, res) => {
      if (delay > 0) setTimeout(() => res.writeHead(200).end(), delay);
      else res.writeHead(200).end();
    });
    env = {
      DATABASE_URL: db.url,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_DATA_DIR: UNUSED_DATA_DIR,
      HOOKPOST_POLL_INTERVAL_MS: '100',
    };
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  async function enqueue(count: number, tag: string) {
    const ep = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    await enqueueMany(t.send, ep, count, (n) => ({ tag, n }), tag);
    return ep as string;
  }
  const arrivals = (tag: string) =>
    receiver.requests.filter((r) => r.body.toString().includes(`"tag":"${tag}"`));
  /** Status counts as the API reports them (in_flight = queue row under lease). */
  const statusCounts = async (endpointId: string) =>
    Object.fromEntries(
      (
        await db.sql`
          SELECT CASE WHEN q.lease_expires_at IS NOT NULL THEN 'in_flight' ELSE d.status END AS status,
                 count(*)::int AS n
          FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id
          WHERE d.endpoint_id = ${endpointId} GROUP BY 1`
      ).map((r) => [r.status, r.n]),
    );

  it('two dispatchers share a backlog of 5,000: every delivery arrives, none twice', async () => {
    const ep = await enqueue(5000, 'shared');
    const a = runHookpost(['dispatcher'], {
      ...env,
      HOOKPOST_CLAIM_BATCH_SIZE: '100',
      HOOKPOST_DISPATCH_CONCURRENCY: '32',
    });
    const b = runHookpost(['dispatcher'], {
      ...env,
      HOOKPOST_CLAIM_BATCH_SIZE: '100',
      HOOKPOST_DISPATCH_CONCURRENCY: '32',
    });
    try {
      await waitFor('all 5,000 delivered', async () => (await statusCounts(ep)).delivered === 5000, 60000);
    } finally {
      assert.equal(await a.stop(), 0, a.output());
      assert.equal(await b.stop(), 0, b.output());
    }
    const got = arrivals('shared');
    const ids = got.map((r) => r.headers['webhook-id']);
    assert.equal(got.length, 5000, 'exactly one request per delivery');
    assert.equal(new Set(ids).size, 5000);
    const [shares] =
      await db.sql`SELECT count(DISTINCT attempt)::int AS attempts FROM delivery_attempts WHERE endpoint_id = ${ep}`;
    assert.equal(shares!.attempts, 1, 'each delivered on its first attempt');
  });

  it('kill -9 mid-backlog: another dispatcher takes over after the lease; nothing lost or stuck', async () => {
    delay = 20;
    const ep = await enqueue(600, 'killed');
    const short = {
      ...env,
      HOOKPOST_LEASE_SECONDS: '3',
      HOOKPOST_REQUEST_TIMEOUT_MS: '1000',
      HOOKPOST_DISPATCH_CONCURRENCY: '16',
      // the reaped deliveries wait out the retry policy's backoff (reap.ts): a short one here
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.05',
    };
    const victim = runHookpost(['dispatcher'], short);
    await waitFor('the victim to deliver some', () => arrivals('killed').length >= 100, 30000);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const before = await statusCounts(ep);
    assert.ok((before.in_flight ?? 0) > 0, 'the killed process left leased deliveries behind');
    delay = 0;
    const rescuer = runHookpost(['dispatcher'], short);
    try {
      await waitFor('all 600 delivered', async () => (await statusCounts(ep)).delivered === 600, 60000);
    } finally {
      await rescuer.stop();
    }
    const unique = new Set(arrivals('killed').map((r) => r.headers['webhook-id']));
    assert.equal(unique.size, 600, 'every delivery arrived at least once');
    assert.deepEqual(await statusCounts(ep), { delivered: 600 }, 'nothing left in_flight');
  });

  it('SIGTERM: exits 0 within the deadline, hands back unsent work, loses nothing', async () => {
    delay = 200;
    const ep = await enqueue(400, 'term');
    const proc = runHookpost(['dispatcher'], {
      ...env,
      HOOKPOST_DISPATCH_CONCURRENCY: '8',
      HOOKPOST_SHUTDOWN_TIMEOUT_MS: '3000',
    });
    await waitFor('some deliveries', () => arrivals('term').length >= 8, 30000);
    const started = Date.now();
    assert.equal(await proc.stop('SIGTERM'), 0, proc.output());
    const took = Date.now() - started;
    assert.ok(took < 5000, `shutdown took ${took} ms`);
    const counts = await statusCounts(ep);
    assert.equal(counts.in_flight ?? 0, 0, 'nothing left leased');
    assert.equal((counts.delivered ?? 0) + (counts.pending ?? 0), 400, JSON.stringify(counts));
    const [charged] = await db.sql`
      SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep} AND attempt_count > 0`;
    assert.equal(charged!.n, 0, 'handed-back deliveries are not charged an attempt');
    delay = 0;
    const finisher = runHookpost(['dispatcher'], env);
    try {
      await waitFor('the rest delivered', async () => (await statusCounts(ep)).delivered === 400, 30000);
    } finally {
      await finisher.stop();
    }
  });
});
