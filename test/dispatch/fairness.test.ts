/**
 * One bad endpoint must not slow the others; latency percentiles; auto-disable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('fairness, percentiles, auto-disable', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  const receivers: Receiver[] = [];
  const dispatchers: Dispatcher[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(async () => {
    await Promise.all(dispatchers.map((d) => d.stop()));
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function endpoint(receiver: Receiver) {
    receivers.push(receiver);
    return (await createEndpoint(t, receiver)).id;
  }
  const enqueue = (endpointId: string, count: number) => enqueueMany(t.send, endpointId, count);
  /** Deliveries/s for `count` deliveries to a fresh fast endpoint, enqueue to last receipt. */
  async function drainRate(count: number) {
    const receiver = await startReceiver();
    const id = await endpoint(receiver);
    const started = Date.now();
    await enqueue(id, count);
    await waitFor(`${count} arrivals`, () => receiver.requests.length >= count, 60000);
    return count / ((receiver.requests.at(-1)!.at - started) / 1000);
  }

  it('an endpoint that hangs every request holds at most its share of the slots; the other keeps its rate', async () => {
    const dispatcher = await startTestDispatcher(db, {
      HOOKPOST_DISPATCH_CONCURRENCY: '64',
      HOOKPOST_REQUEST_TIMEOUT_MS: '2000',
      HOOKPOST_LEASE_SECONDS: '30',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
    });
    dispatchers.push(dispatcher);
    const solo = await drainRate(2000);
    const hanging = await startReceiver(() => {
      /* never answers: every attempt runs to the timeout */
    });
    const bad = await endpoint(hanging);
    await enqueue(bad, 5000);
    await waitFor('the bad endpoint to hold slots', () => hanging.requests.length >= 10);
    const contended = await drainRate(2000);
    const ratio = contended / solo;
    console.log(
      `# fairness: solo ${solo.toFixed(0)}/s, next to a hanging endpoint ${contended.toFixed(0)}/s, ratio ${ratio.toFixed(2)}`,
    );
    // The property, exactly: the hanging endpoint holds at most its quarter of the 64 HTTP
    // slots. No slot of it frees before its first attempt times out (2 s), so within the first
    // second after its first request at most 16 can have arrived (the buffer's own rules are
    // unit-tested in local-queues.test.ts).
    const first = hanging.requests[0]!.at;
    const early = hanging.requests.filter((r) => r.at < first + 1000).length;
    assert.ok(early <= 16 && early >= 10, `the hanging endpoint took ${early} of 64 slots`);
    // Smoke check only (wall clock on a shared machine): the healthy endpoint kept most of its rate.
    assert.ok(
      ratio >= 0.5,
      `ratio ${ratio.toFixed(2)} (solo ${solo.toFixed(0)}/s, contended ${contended.toFixed(0)}/s)`,
    );
    await dispatcher.stop();
  });

  it('reports p50/p95/p99 from known delays (90% 10 ms, 10% 200 ms)', async () => {
    const dispatcher = await startTestDispatcher(db, { HOOKPOST_DISPATCH_CONCURRENCY: '16' });
    dispatchers.push(dispatcher);
    let n = 0;
    const receiver = await startReceiver((_req, res) => {
      n++;
      setTimeout(() => res.writeHead(200).end(), n % 10 === 0 ? 200 : 10);
    });
    const id = await endpoint(receiver);
    await enqueue(id, 300);
    await waitFor('300 delivered', async () => {
      const h = await (await t.send('GET', `/v1/endpoints/${id}/health`)).json();
      return h.sample_count >= 300 ? h : undefined;
    });
    const h = await (await t.send('GET', `/v1/endpoints/${id}/health`)).json();
    // Exactly: against the durations actually recorded in the attempt log. Histogram buckets grow
    // by 25% and the estimate is interpolated inside the bucket that holds the true value, so it
    // is guaranteed to lie in that bucket: between truth / 1.25 and truth × 1.25 (plus a
    // millisecond of rounding). Typically it is much closer; the guarantee is what is asserted
    // (a p99 of 216 ms read as 245 ms, both in the 211.8 – 264.7 ms bucket, was seen under load).
    const [exact] = await db.sql<{ p: number[] }[]>`
      SELECT percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms) AS p
      FROM delivery_attempts WHERE endpoint_id = ${id}`;
    const [p50, p95, p99] = exact!.p;
    for (const [name, estimate, truth] of [
      ['p50', h.p50_ms, p50!],
      ['p95', h.p95_ms, p95!],
      ['p99', h.p99_ms, p99!],
    ] as const) {
      assert.ok(
        estimate >= truth / 1.25 - 1 && estimate <= truth * 1.25 + 1,
        `${name} ${estimate} ms, exact ${truth} ms`,
      );
    }
    // Smoke check only (timers on a shared machine): the two delay groups show.
    assert.ok(h.p50_ms < 100 && h.p95_ms >= 150, `p50 ${h.p50_ms}, p95 ${h.p95_ms}`);
    assert.equal(h.state, 'closed');
    const slow = await (await t.send('GET', '/v1/endpoints/slow?p95_ms=100')).json();
    assert.ok(slow.data.some((e: { endpoint_id: string }) => e.endpoint_id === id));
    const notSlow = await (await t.send('GET', '/v1/endpoints/slow?p95_ms=1000')).json();
    assert.ok(!notSlow.data.some((e: { endpoint_id: string }) => e.endpoint_id === id));
    assert.equal((await t.send('GET', '/v1/endpoints/slow?p95_ms=fast')).status, 400);
    await dispatcher.stop();
  });

  it('disables an endpoint that keeps failing, keeps its deliveries, and re-enabling resets the breaker', async () => {
    const dispatcher = await startTestDispatcher(db, {
      HOOKPOST_DISABLE_AFTER_SECONDS: '0.5',
      HOOKPOST_BREAKER_THRESHOLD: '2',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '0.2',
      HOOKPOST_MAX_ATTEMPTS: '1000',
    });
    dispatchers.push(dispatcher);
    let healthy = false;
    const receiver = await startReceiver((_req, res) => res.writeHead(healthy ? 200 : 503).end());
    const id = await endpoint(receiver);
    await enqueue(id, 5);
    const disabled = await waitFor('auto-disable', async () => {
      const e = await (await t.send('GET', `/v1/endpoints/${id}`)).json();
      return e.enabled === false ? e : undefined;
    });
    assert.match(disabled.disabled_reason, /failing continuously since/);
    const [kept] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${id}`;
    assert.equal(kept!.n, 5, 'its deliveries are kept');
    healthy = true;
    const reenabled = await (await t.send('PATCH', `/v1/endpoints/${id}`, { enabled: true })).json();
    assert.equal(reenabled.enabled, true);
    const h = await (await t.send('GET', `/v1/endpoints/${id}/health`)).json();
    assert.equal(h.state, 'closed');
    assert.equal(h.consecutive_failures, 0);
    await waitFor('delivered after re-enabling', async () => {
      const [row] =
        await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${id} AND status = 'delivered'`;
      return row!.n === 5;
    });
    await dispatcher.stop();
  });
});
