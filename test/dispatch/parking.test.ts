/**
 * A dispatcher whose in-flight deliveries lose their endpoint (disabled) must not spin on them:
 * they come back parked, and the claim loop sleeps instead of re-polling every 20 ms.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import {
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('dispatcher: parked deliveries are not polled', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;
  const held: http.ServerResponse[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    receiver = await startReceiver((_req, res) => held.push(res));
    dispatcher = await startTestDispatcher(db);
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  /** Transactions committed in this test's database (the dispatcher is its only client now). */
  const commits = async () =>
    (
      await db.sql<{ n: string }[]>`
        SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`
    )[0]!.n;

  it('deliveries in flight when their endpoint is disabled come back parked; the loop stays quiet', async () => {
    const ep = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id as string;
    await enqueueMany(t.send, ep, 3);
    await waitFor('three requests in flight', () => held.length === 3);
    assert.equal((await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: false })).status, 200);
    for (const res of held.splice(0)) res.writeHead(500).end();
    await waitFor('all three back in the queue, parked', async () => {
      const [row] = await db.sql`
        SELECT count(*) FILTER (WHERE state = 'parked')::int AS parked
        FROM delivery_queue WHERE endpoint_id = ${ep}`;
      return row!.parked === 3;
    });
    const list = await (await t.send('GET', `/v1/deliveries?endpoint_id=${ep}`)).json();
    assert.deepEqual(
      list.data.map((d: { status: string; parked: string }) => [d.status, d.parked]),
      [
        ['failed', 'endpoint_disabled'],
        ['failed', 'endpoint_disabled'],
        ['failed', 'endpoint_disabled'],
      ],
    );
    // Statistics reach pg_stat_database within about a second; measure over a few seconds.
    await new Promise((r) => setTimeout(r, 1500));
    const before = BigInt(await commits());
    await new Promise((r) => setTimeout(r, 3000));
    const during = Number(BigInt(await commits()) - before);
    // Idle, the dispatcher commits a few statements a second (poll, breaker tick); re-polling
    // due-but-unclaimable rows every 20 ms was about 100 a second.
    assert.ok(during < 100, `${during} transactions in 3 s while everything is parked`);
    assert.equal(receiver.requests.length, 3, 'nothing more was sent');
  });
});
