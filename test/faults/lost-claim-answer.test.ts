/**
 * A claim the database committed but whose answer never reached the dispatcher (the connection
 * died after the commit): its rows are leased to a process that does not know it holds them.
 * The dispatcher hands them back by the claim's lease token as soon as the database answers
 * again, so they are sent within seconds, not after the lease (60 s here) has run out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

describe('a claim whose answer was lost', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let dispatchSql: Sql;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    proxy = await startProxy(Number(new URL(db.url).port));
    dispatchSql = connect(proxy.via(db.url), { max: 4 });
    t = await createTestApp(db); // the API talks to the database directly
    receiver = await startReceiver();
    dispatcher = await startTestDispatcher(
      { ...db, sql: dispatchSql },
      { HOOKPOST_LEASE_SECONDS: '60', HOOKPOST_POLL_INTERVAL_MS: '200' },
    );
  });
  after(async () => {
    await proxy.restore().catch(() => {});
    await dispatcher.stop();
    await dispatchSql.end({ timeout: 1 });
    await proxy.close();
    await receiver.close();
    await db.drop();
  });

  const leased = async (endpointId: string) => {
    const [row] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM delivery_queue
      WHERE endpoint_id = ${endpointId} AND lease_expires_at IS NOT NULL`;
    return row!.n;
  };
  const arrived = () => new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size;

  it('is handed back by its lease token once the database answers, long before the lease ends', async () => {
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    const items = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        endpoint_id: endpointId,
        event_type: 'o',
        payload: { i, marker: 'lost-claim-marker' },
      }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items: items(1) })).status, 202);
    await waitFor('the warm-up delivery', () => arrived() === 1);
    await waitFor('its result written', async () => ((await leased(endpointId)) === 0 ? true : undefined));

    let lost = false;
    // The claim is the statement that returns the payloads.
    void proxy.loseNextAnswerContaining('lost-claim-marker').then(() => {
      lost = true;
    });
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items: items(5) })).status, 202);
    // Its five rows are now leased to a dispatcher that does not know it holds them.
    await waitFor('the claim to be committed and its answer lost', () => lost, 10000);

    const back = Date.now();
    // Without the hand-back they would wait out the 60 s lease and the reaper.
    await waitFor('the lost claim to be delivered', () => arrived() === 6, 15000);
    console.log(`# lost claim delivered ${Date.now() - back} ms after its connection died`);
    const rows = (await waitFor('every result written', async () => {
      const all = await db.sql<{ status: string; attempts: number }[]>`
        SELECT d.status, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
        FROM deliveries d WHERE d.endpoint_id = ${endpointId}`;
      return all.length === 6 && all.every((r) => r.status === 'delivered') ? all : undefined;
    }))!;
    assert.ok(
      rows.every((r) => r.attempts === 1),
      `each delivery was attempted once: ${rows.map((r) => r.attempts).join(' ')}`,
    );
  });
});
