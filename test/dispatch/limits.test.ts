/**
 * Endpoint protection across two real dispatcher processes: the shared circuit breaker,
 * max_in_flight and rate_limit_per_second are enforced for all processes together.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type HookpostProcess, runHookpost } from '../cli/process.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('endpoint limits and breaker with two dispatchers', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatchers: HookpostProcess[] = [];
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    const env = {
      DATABASE_URL: db.url,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_POLL_INTERVAL_MS: '100',
      HOOKPOST_BREAKER_THRESHOLD: '3',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '1',
      HOOKPOST_BREAKER_MAX_COOLDOWN_SECONDS: '8',
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.02',
      HOOKPOST_MAX_ATTEMPTS: '100',
    };
    dispatchers = [runHookpost(['dispatcher'], env), runHookpost(['dispatcher'], env)];
    await sleep(500);
  });
  after(async () => {
    await Promise.all(dispatchers.map((d) => d.stop()));
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function endpoint(receiver: Receiver, extra: Record<string, unknown> = {}) {
    receivers.push(receiver);
    return (await createEndpoint(t, receiver, extra)).id;
  }
  const enqueue = (endpointId: string, count: number) => enqueueMany(t.send, endpointId, count);
  const health = async (id: string) => (await t.send('GET', `/v1/endpoints/${id}/health`)).json();
  const leased = async (id: string) =>
    (
      await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${id} AND lease_expires_at IS NOT NULL`
    )[0]!.n;
  const delivered = async (id: string) =>
    (
      await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${id} AND status = 'delivered'`
    )[0]!.n;

  it('opens after the threshold, sends nothing while open, one probe per cooldown, doubles it, closes on success', async () => {
    let healthy = false;
    const receiver = await startReceiver((_req, res) => res.writeHead(healthy ? 200 : 500).end());
    // max_in_flight 1 makes the failures arrive one after another, so the count is exact.
    const id = await endpoint(receiver, { max_in_flight: 1 });
    await enqueue(id, 20);
    await waitFor('the circuit to open', async () => (await health(id)).state === 'open');
    // A delivery claimed before the circuit opened may still be on its way: with two dispatchers
    // the other one can claim the next delivery between the write of the third failure and the
    // breaker update that follows it (max_in_flight's slot is free by then). That attempt was in
    // flight when the circuit opened; no claim can follow the open (the claim reads the circuit
    // in the same statement that leases, and opening parks every waiting row). So count from the
    // moment nothing of this endpoint is leased any more.
    await waitFor(
      'attempts claimed before the circuit opened to finish',
      async () => (await leased(id)) === 0,
    );
    const atOpen = receiver.requests.length;
    assert.ok(atOpen >= 3 && atOpen <= 4, `${atOpen} requests before opening (threshold 3)`);
    const opened = await health(id);
    assert.equal(opened.cooldown_seconds, 1);

    // Until shortly before the 1 s cooldown ends, counted from when it opened.
    await sleep(Math.max(0, Date.parse(opened.opened_at) + 800 - Date.now()));
    assert.equal(receiver.requests.length, atOpen, 'nothing is sent during the cooldown');
    await waitFor('the probe', () => receiver.requests.length === atOpen + 1, 5000);
    await sleep(500);
    assert.equal(receiver.requests.length, atOpen + 1, 'exactly one probe, with two dispatchers running');
    const reopened = await waitFor('re-opened with a doubled cooldown', async () => {
      const h = await health(id);
      return h.state === 'open' && h.cooldown_seconds === 2 ? h : undefined;
    });
    assert.equal(reopened.cooldown_seconds, 2);

    const [{ charged }] = (await db.sql`
      SELECT sum(attempt_count)::int AS charged FROM deliveries WHERE endpoint_id = ${id}`) as unknown as [
      { charged: number },
    ];
    assert.equal(charged, receiver.requests.length, 'attempts are charged only for requests actually sent');

    healthy = true;
    await waitFor('all delivered after a successful probe', async () => (await delivered(id)) === 20, 15000);
    const closed = await health(id);
    assert.equal(closed.state, 'closed');
    assert.equal(closed.consecutive_failures, 0);
  });

  it('max_in_flight 3: never more than 3 concurrent requests across both dispatchers', async () => {
    let current = 0;
    let peak = 0;
    const receiver = await startReceiver((_req, res) => {
      current++;
      peak = Math.max(peak, current);
      setTimeout(() => {
        current--;
        res.writeHead(200).end();
      }, 30);
    });
    const id = await endpoint(receiver, { max_in_flight: 3 });
    await enqueue(id, 60);
    await waitFor('60 delivered', async () => (await delivered(id)) === 60, 30000);
    assert.ok(peak <= 3, `peak concurrency ${peak}`);
    assert.equal(peak, 3, 'the limit is used, not undershot');
  });

  it('rate_limit_per_second 50 over 5 s: at most 50 per second plus the burst', async () => {
    const receiver = await startReceiver();
    const id = await endpoint(receiver, { rate_limit_per_second: 50 });
    await enqueue(id, 400);
    await waitFor('first arrival', () => receiver.requests.length > 0);
    const start = receiver.requests[0]!.at;
    await sleep(5200);
    const times = receiver.requests.map((r) => r.at - start).filter((ms) => ms < 5000);
    let worstSecond = 0;
    for (const from of times)
      worstSecond = Math.max(worstSecond, times.filter((x) => x >= from && x < from + 1000).length);
    const burst = 10; // a fifth of a second's worth
    // Tokens are granted at claim time; arrivals are timed at the receiver, each late by its own
    // claim-to-arrival delay. On a loaded 2-core machine those delays differ by up to ~100 ms,
    // which can move 5 grants' worth (at 50/s) into a window: allowed, not more.
    const jitter = 5;
    assert.ok(worstSecond <= 50 + burst + jitter, `${worstSecond} requests in one second`);
    assert.ok(
      times.length >= 225 && times.length <= 250 + burst + jitter,
      `${times.length} requests in 5 s, expected ~250`,
    );
  });
});
