/**
 * At low rates each round trip costs more than the rows it moves: a wake-up that finds a few
 * deliveries makes one claim (a short claim is not followed by another that finds nothing),
 * and the claim itself tells the endpoint cache each endpoint's config version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { createOutcomeHandler } from '../../src/dispatch/outcomes.js';
import { createLogger } from '../../src/log.js';
import { type CuttableProxy, startProxy } from '../faults/tcp-proxy.js';
import {
  createTestApp,
  createTestDatabase,
  deliveredResult,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  testConfig,
  waitFor,
} from '../helpers.js';

describe('claims per wake-up', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let claimSql: Sql;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let receiver: Receiver;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;

  before(async () => {
    db = await createTestDatabase();
    proxy = await startProxy(Number(new URL(db.url).port));
    claimSql = connect(proxy.via(db.url), { max: 1 });
    t = await createTestApp(db);
    receiver = await startReceiver();
    // A long poll interval: within the test, only the enqueue's NOTIFY wakes the claim loop.
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '60000' }, { claimSql });
  });
  after(async () => {
    await dispatcher?.stop();
    await claimSql?.end({ timeout: 5 });
    await proxy?.close();
    await receiver?.close();
    await db?.drop();
  });

  it('makes one claim for a wake-up whose batch is short, and sends with the claimed version', async () => {
    const ep = await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json();
    const enqueueThree = () =>
      t.send('POST', '/v1/deliveries/batch', {
        items: [1, 2, 3].map((n) => ({ endpoint_id: ep.id, event_type: 't', payload: { n } })),
      });
    // The results are written after the claim loop went back to sleep (it claims before it sends,
    // and a second claim for a short batch would follow the first at once): once they are,
    // every claim of the wake-up has been made. Nothing else wakes it: no poll within the test,
    // and the maintenance ticks wake it only for what they made due.
    const written = (n: number) =>
      waitFor(`${n} results written`, async () => {
        const [row] = await db.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${ep.id} AND status = 'delivered'`;
        return row!.n === n;
      });
    // First round: the claim statement's first use on the connection, and the endpoint loaded.
    assert.equal((await enqueueThree()).status, 202);
    await written(3);
    const before = proxy.turns();
    assert.equal((await enqueueThree()).status, 202);
    await written(6);
    assert.equal(proxy.turns() - before, 1, 'one claim statement on the claim pool for the wake-up');

    // A change committed before the claim is seen by the next attempt: the version comes with it.
    const patched = await t.send('PATCH', `/v1/endpoints/${ep.id}`, { headers: { 'x-version': 'two' } });
    assert.equal(patched.status, 200);
    assert.equal((await enqueueThree()).status, 202);
    await waitFor('three more', () => receiver.requests.length === 9);
    assert.deepEqual(
      receiver.requests.slice(6).map((r) => r.headers['x-version']),
      ['two', 'two', 'two'],
    );
  });

  it("sends a batch's breaker update and latency samples together: one round trip on a one-connection pool", async () => {
    const ep = await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json();
    const followUp = createOutcomeHandler(
      claimSql,
      testConfig().policies.breaker,
      createLogger('silent'),
    ).afterWrite;
    const result = (n: number) =>
      deliveredResult(
        { id: `dlv_${n}`, endpointId: ep.id, leaseToken: crypto.randomUUID() },
        { durationMs: 5 * n },
      );
    await followUp([result(1)]); // the statements' first use on the connection
    const before = proxy.turns();
    await followUp([result(2), result(3)]);
    assert.equal(proxy.turns() - before, 1, 'both statements pipelined on one connection');
    const [row] = await db.sql<{ samples: number }[]>`
      SELECT sum(x)::int AS samples FROM endpoint_latency_minutes, unnest(buckets) AS x WHERE endpoint_id = ${ep.id}`;
    assert.equal(row!.samples, 3, 'every sample recorded');
    const [health] = await db.sql<{ ok: boolean }[]>`
      SELECT last_success_at IS NOT NULL AS ok FROM endpoint_health WHERE endpoint_id = ${ep.id}`;
    assert.equal(health!.ok, true, 'the breaker saw the successes');
  });
});
