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
    // Observes every claim on the database's clock (the one the token bucket counts with): a row
    // per delivery leased, stamped with the claim's transaction time.
    await db.sql`CREATE TABLE test_claims (endpoint_id text NOT NULL, claimed_at timestamptz NOT NULL)`;
    await db.sql`
      CREATE FUNCTION test_record_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO test_claims VALUES (NEW.endpoint_id, now());
        RETURN NEW;
      END $$`;
    await db.sql`
      CREATE TRIGGER test_claims AFTER UPDATE ON delivery_queue FOR EACH ROW
      WHEN (OLD.state = 'scheduled' AND NEW.state = 'leased') EXECUTE FUNCTION test_record_claim()`;
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
    // Exactly the threshold, with two dispatchers: the third failure's write and the breaker's
    // count of it commit together, and max_in_flight 1 leaves nothing else in flight, so no claim
    // can slip in between (the claim reads the circuit in the statement that leases, and opening
    // parks every waiting row). When the count followed the write, the other dispatcher could
    // claim (and send) in that gap, one request more per follow-up it outran.
    assert.equal(await leased(id), 0, 'nothing in flight once the circuit is open');
    const atOpen = receiver.requests.length;
    assert.equal(atOpen, 3, `${atOpen} requests before opening (threshold 3)`);
    const opened = await health(id);
    assert.equal(opened.cooldown_seconds, 1);

    await waitFor('the probe', () => receiver.requests.length >= atOpen + 1, 5000);
    // Nothing was sent during the cooldown: the next request is the probe, after it ended.
    const probeAt = receiver.requests[atOpen]!.at;
    assert.ok(
      probeAt >= Date.parse(opened.opened_at) + 1000 - 50,
      `the probe came ${probeAt - Date.parse(opened.opened_at)} ms after the circuit opened (cooldown 1 s)`,
    );
    const reopened = await waitFor('re-opened with a doubled cooldown', async () => {
      const h = await health(id);
      return h.state === 'open' && h.cooldown_seconds === 2 ? h : undefined;
    });
    assert.equal(reopened.cooldown_seconds, 2);
    // Its failure re-opened the circuit, and nothing else was claimed meanwhile: one probe, with
    // two dispatchers running, and none more until the next cooldown ends.
    assert.equal(receiver.requests.length, atOpen + 1, 'exactly one probe, with two dispatchers running');
    assert.equal(await leased(id), 0);

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

  it('rate_limit_per_second 50: at most 50 per second plus the burst, across both dispatchers', async () => {
    const receiver = await startReceiver();
    const id = await endpoint(receiver, { rate_limit_per_second: 50 });
    await enqueue(id, 300);
    await waitFor('300 delivered', async () => (await delivered(id)) === 300, 30000);
    // Counted where the limit is kept: the claims' times on the database's clock, not arrivals
    // at the receiver (each late by its own claim-to-arrival delay, which a loaded machine
    // stretches by 100 ms and more).
    const claims = (
      await db.sql<{ ms: number }[]>`
        SELECT extract(epoch FROM claimed_at) * 1000 AS ms FROM test_claims WHERE endpoint_id = ${id}
        ORDER BY claimed_at`
    ).map((r) => Number(r.ms));
    assert.ok(
      claims.length >= 300,
      'every delivery claimed (a claim handed back is claimed, and charged, again)',
    );
    let worstSecond = 0;
    for (const from of claims)
      worstSecond = Math.max(worstSecond, claims.filter((x) => x >= from && x < from + 1000).length);
    const burst = 10; // a fifth of a second's worth
    assert.ok(worstSecond <= 50 + burst, `${worstSecond} claimed in one second`);
    assert.ok(worstSecond >= 40, `${worstSecond} claimed in the busiest second: the limit is used`);
    // 300 at 50/s, less the first burst: about 6 s, never less than 5.6 s.
    const spanMs = claims.at(-1)! - claims[0]!;
    assert.ok(spanMs >= (300 - burst) * 20 - 200, `300 claimed within ${spanMs} ms`);
  });
});
