import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
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

const KEY = 'dispatcher-key-0123456789';
const LOST_KEY = 'a-key-this-dispatcher-lacks';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('an endpoint whose secret cannot be decrypted fails alone', () => {
  let db: TestDatabase;
  const receivers: Receiver[] = [];
  const dispatchers: Dispatcher[] = [];
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    for (const d of dispatchers) await d.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  it('fails its deliveries with secret_unavailable, sends nothing, charges nothing, and leaves others untouched', async () => {
    const good = await startReceiver();
    const bad = await startReceiver();
    receivers.push(good, bad);
    const t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    const lostApp = await createTestApp(db, { HOOKPOST_SECRET_KEY: LOST_KEY });
    const goodEp = await (
      await t.send('POST', '/v1/endpoints', {
        url: good.url,
        headers: { Authorization: 'Bearer good-token-1234' },
      })
    ).json();
    const badEp = await (await lostApp.send('POST', '/v1/endpoints', { url: bad.url })).json();

    // Both endpoints' deliveries are interleaved in the same claim batches.
    const items = Array.from({ length: 60 }, (_, i) => ({
      endpoint_id: i % 3 === 0 ? badEp.id : goodEp.id,
      event_type: 'x',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    dispatchers.push(
      // A high breaker threshold lets every retry run (the breaker would park them otherwise).
      await startTestDispatcher(db, {
        HOOKPOST_SECRET_KEY: KEY,
        HOOKPOST_MAX_ATTEMPTS: '3',
        HOOKPOST_BREAKER_THRESHOLD: '1000',
      }),
    );

    await waitFor('the good endpoint to receive all 40', () => good.requests.length >= 40);
    const request = good.requests[0]!;
    assert.equal(request.headers.authorization, 'Bearer good-token-1234', 'sealed header sent decrypted');
    new Webhook(goodEp.secret).verify(request.body.toString(), request.headers as Record<string, string>);

    // Not charged (nothing was sent): they are retried, never dead-lettered for it.
    await waitFor("each of the bad endpoint's 20 to be tried three times", async () => {
      const [row] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM (
          SELECT delivery_id FROM delivery_attempts WHERE endpoint_id = ${badEp.id}
          GROUP BY delivery_id HAVING count(*) >= 3) tried`;
      return row!.n === 20;
    });
    const [uncharged] = await db.sql<{ n: number; charged: number }[]>`
      SELECT count(*)::int AS n, coalesce(sum(attempt_count), 0)::int AS charged FROM deliveries
      WHERE endpoint_id = ${badEp.id} AND status <> 'dead_letter'`;
    assert.deepEqual({ ...uncharged }, { n: 20, charged: 0 }, 'none dead-lettered, none charged');
    assert.equal(bad.requests.length, 0, 'nothing is sent without a signature');
    const classes = await db.sql<{ error_class: string; error: string }[]>`
      SELECT DISTINCT error_class, error FROM delivery_attempts WHERE endpoint_id = ${badEp.id}`;
    assert.equal(classes.length, 1);
    assert.equal(classes[0]!.error_class, 'secret_unavailable');
    assert.match(classes[0]!.error, /cannot be decrypted/);
    assert.ok(!classes[0]!.error.includes(LOST_KEY), 'no key material in the attempt log');
    const [latency] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM endpoint_latency_minutes WHERE endpoint_id = ${badEp.id}`;
    assert.equal(latency!.n, 0, 'no request was made: no latency sample');
    const [goodState] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${goodEp.id} AND status = 'delivered'`;
    assert.equal(goodState!.n, 40);
  });

  it('delivers them once the old key is given in HOOKPOST_SECRET_KEY_PREVIOUS', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const lostApp = await createTestApp(db, { HOOKPOST_SECRET_KEY: LOST_KEY });
    const ep = await (await lostApp.send('POST', '/v1/endpoints', { url: receiver.url })).json();
    for (const d of dispatchers.splice(0)) await d.stop();
    dispatchers.push(
      await startTestDispatcher(db, { HOOKPOST_SECRET_KEY: KEY, HOOKPOST_SECRET_KEY_PREVIOUS: LOST_KEY }),
    );
    await enqueueMany(lostApp.send, ep.id, 3);
    await waitFor('three deliveries', () => receiver.requests.length >= 3);
    for (const r of receiver.requests) {
      new Webhook(ep.secret).verify(r.body.toString(), r.headers as Record<string, string>);
    }
  });
});
