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

  it('an endpoint that hangs every request does not slow another one (>= 90% of its solo rate)', async () => {
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
    assert.ok(
      ratio >= 0.9,
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
    // Tolerance: histogram buckets grow by 25%, so an estimate is within ~12% of the true
    // value; timers and loopback add a few ms on top of the receiver's delay.
    assert.ok(h.p50_ms >= 9 && h.p50_ms <= 16, `p50 ${h.p50_ms}`);
    assert.ok(h.p95_ms >= 175 && h.p95_ms <= 260, `p95 ${h.p95_ms}`);
    assert.ok(h.p99_ms >= 175 && h.p99_ms <= 280, `p99 ${h.p99_ms}`);
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
