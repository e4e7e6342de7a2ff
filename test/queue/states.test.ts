/**
 * The queue row's states (src/queue/states.ts) and the rule they keep: a waiting row of a
 * disabled endpoint or of an open circuit is parked, a deleted endpoint's rows end cancelled,
 * including rows that come back from flight (a retry result, a handed-back claim, a reaped lease).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { claimBatch } from '../../src/queue/claim.js';
import { completeAttempts } from '../../src/queue/complete.js';
import { releaseClaims } from '../../src/queue/hand-back.js';
import { reapExpiredLeases } from '../../src/queue/reap.js';
import { sweepUnclaimable } from '../../src/queue/states.js';
import {
  attemptResult,
  claimDue,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  noBackoff,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('queue states: parked, cancelled, never due but unclaimable', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  async function endpointWith(count: number): Promise<string> {
    const id = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json())
      .id as string;
    await enqueueMany(t.send, id, count);
    return id;
  }
  /** Claims the endpoint's due rows; other endpoints' rows are handed straight back. */
  const claimAll = async (endpointId: string, leaseSeconds = 60) => {
    const claimed = await claimDue(db.sql, {
      limit: 100,
      leaseSeconds,
      saturated: [],
      perEndpointLimit: 100,
      limitedEndpoints: false,
    });
    await releaseClaims(
      db.sql,
      claimed.filter((c) => c.endpointId !== endpointId),
    );
    return claimed.filter((c) => c.endpointId === endpointId).sort((x, y) => (x.id < y.id ? -1 : 1));
  };
  const rows = (endpointId: string) => db.sql<{ status: string; parked: boolean | null; leased: boolean }[]>`
    SELECT d.status, q.state = 'parked' AS parked, q.lease_expires_at IS NOT NULL AS leased
    FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id
    WHERE d.endpoint_id = ${endpointId} ORDER BY d.id`;
  const patch = (id: string, body: unknown) => t.send('PATCH', `/v1/endpoints/${id}`, body);

  it('in-flight deliveries of an endpoint disabled meanwhile come back parked, not due', async () => {
    const ep = await endpointWith(3);
    const [a, b, c] = await claimAll(ep, 0.2);
    assert.equal((await patch(ep, { enabled: false })).status, 200);
    await completeAttempts(db.sql, [attemptResult(a!, 'failed')]); // a retry result
    await releaseClaims(db.sql, [b!]); // a claim handed back unsent
    await new Promise((r) => setTimeout(r, 300));
    await reapExpiredLeases(db.sql, noBackoff(8)); // a lease that ran out
    assert.ok(c);
    assert.deepEqual(
      (await rows(ep)).map((r) => r.parked),
      [true, true, true],
      'all three come back parked',
    );
    const nothing = await claimBatch(db.sql, {
      limit: 100,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 100,
      limitedEndpoints: false,
    });
    assert.deepEqual(
      nothing,
      { deliveries: [], nextDueAt: null },
      'nothing is due, so the claim loop sleeps',
    );

    // Re-enabling resets the breaker and makes them due again.
    assert.equal((await patch(ep, { enabled: true })).status, 200);
    assert.deepEqual(
      (await rows(ep)).map((r) => r.parked),
      [false, false, false],
    );
    await releaseClaims(db.sql, await claimAll(ep));
  });

  it("a deleted endpoint's deliveries end cancelled, including those coming back from flight", async () => {
    const ep = await endpointWith(5);
    const [a, b, c, d, e] = await claimAll(ep, 0.2);
    await releaseClaims(db.sql, [e!]);
    const waiting = (await rows(ep)).filter((r) => !r.leased).length;
    assert.equal(waiting, 1);
    assert.equal((await t.send('DELETE', `/v1/endpoints/${ep}`)).status, 204);
    await completeAttempts(db.sql, [attemptResult(a!, 'failed'), attemptResult(b!, 'delivered')]);
    await releaseClaims(db.sql, [c!]);
    await new Promise((r) => setTimeout(r, 300));
    const reaped = await reapExpiredLeases(db.sql, noBackoff(8));
    assert.equal(reaped.cancelled, 1, `reaped ${JSON.stringify(reaped)} (${d!.id})`);
    const statuses = (await rows(ep)).map((r) => r.status).sort();
    assert.deepEqual(statuses, ['cancelled', 'cancelled', 'cancelled', 'cancelled', 'delivered']);
    const [left] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep}`;
    assert.equal(left!.n, 0, 'no queue row is left behind');
  });

  it('a claim handed back while its message is being expunged leaves the queue at once, cancelled', async () => {
    const ep = await endpointWith(1);
    const [a] = await claimAll(ep);
    // The expunge's mark, not yet committed when the hand-back starts.
    let commit = () => {};
    const committed = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let marked = () => {};
    const isMarked = new Promise<void>((resolve) => {
      marked = resolve;
    });
    const expunge = db.sql.begin(async (tx) => {
      await tx`UPDATE delivery_queue SET state = 'cancelling' WHERE delivery_id = ${a!.id}`;
      marked();
      await committed;
    });
    await isMarked;
    const handedBack = releaseClaims(db.sql, [a!]);
    await waitFor('the hand-back waiting on the mark', async () => {
      const [w] = await db.sql`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      return w!.n > 0;
    });
    commit();
    await expunge;
    assert.equal(await handedBack, 1);
    assert.deepEqual([...(await rows(ep))], [{ status: 'cancelled', parked: null, leased: false }]);
  });

  it('names no next probe for a disabled endpoint (the breaker probes enabled ones only)', async () => {
    const ep = await endpointWith(1);
    await db.sql`UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 60
                 WHERE endpoint_id = ${ep}`;
    const probeOf = async () =>
      (await (await t.send('GET', `/v1/endpoints/${ep}/health`)).json()).next_probe_at;
    assert.notEqual(await probeOf(), null);
    assert.equal((await patch(ep, { enabled: false })).status, 200);
    assert.equal(await probeOf(), null);
  });

  it('an open circuit parks retries and new deliveries; closing releases them', async () => {
    const ep = await endpointWith(2);
    const [a, b] = await claimAll(ep);
    await releaseClaims(db.sql, [b!]); // waiting, due, before the circuit opens
    await db.sql`
      UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 300 WHERE endpoint_id = ${ep}`;
    await completeAttempts(db.sql, [attemptResult(a!, 'failed')]);
    await enqueueMany(t.send, ep, 1);
    const parkedOf = async () =>
      new Map(
        (
          await db.sql<{ id: string; parked: boolean }[]>`
            SELECT delivery_id AS id, state = 'parked' AS parked FROM delivery_queue WHERE endpoint_id = ${ep}`
        ).map((r) => [r.id, r.parked]),
      );
    const parked = await parkedOf();
    assert.equal(parked.size, 3);
    assert.equal(parked.get(a!.id), true, 'the retry comes back parked');
    assert.equal(parked.get(b!.id), false, 'a row waiting from before (the breaker parks it when it opens)');
    const fresh = [...parked.keys()].find((id) => id !== a!.id && id !== b!.id)!;
    assert.equal(parked.get(fresh), true, 'a new delivery to an open circuit starts parked');
    assert.deepEqual(
      await sweepUnclaimable(db.sql),
      { parked: 1, cancelled: 0, unparked: 0 },
      'the sweep parks the stray one',
    );
    assert.equal((await parkedOf()).get(b!.id), true);

    const delivery = await (await t.send('GET', `/v1/deliveries?endpoint_id=${ep}&limit=1`)).json();
    assert.equal(delivery.data[0].parked, 'circuit_open', 'lists show why too');
    const one = await (await t.send('GET', `/v1/deliveries/${a!.id}`)).json();
    assert.equal(one.parked, 'circuit_open');
    assert.equal(one.next_attempt_at, null);
    assert.ok(Date.parse(one.next_probe_at) > Date.now() + 200_000, `next probe at ${one.next_probe_at}`);

    assert.equal((await patch(ep, { enabled: false })).status, 200);
    assert.equal((await (await t.send('GET', `/v1/deliveries/${a!.id}`)).json()).parked, 'endpoint_disabled');
    assert.equal((await patch(ep, { enabled: true })).status, 200);
    const back = await (await t.send('GET', `/v1/deliveries/${a!.id}`)).json();
    assert.equal(back.parked, null, 're-enabled: breaker reset, released');
    assert.ok(back.next_attempt_at);
    await releaseClaims(db.sql, await claimAll(ep));
  });

  it('one batch to an open circuit, a disabled endpoint and a healthy one: each row starts as its endpoint says', async () => {
    // The enqueue looks each endpoint's start up once per batch; mixed in one batch, no endpoint's
    // state may leak onto another's rows.
    const [open, disabled, healthy] = [await endpointWith(0), await endpointWith(0), await endpointWith(0)];
    await db.sql`
      UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 300 WHERE endpoint_id = ${open}`;
    assert.equal((await patch(disabled, { enabled: false })).status, 200);
    const items = [open, disabled, healthy, open, healthy].map((endpoint_id, i) => ({
      endpoint_id,
      event_type: 'x',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    const rows = await db.sql<{ endpoint_id: string; n: number; parked: number }[]>`
      SELECT endpoint_id, count(*)::int AS n, count(*) FILTER (WHERE state = 'parked')::int AS parked
      FROM delivery_queue WHERE endpoint_id IN (${open}, ${disabled}, ${healthy}) GROUP BY endpoint_id`;
    const byEndpoint = new Map(rows.map((r) => [r.endpoint_id, [r.n, r.parked]]));
    assert.deepEqual(byEndpoint.get(open), [2, 2], 'open circuit: both parked');
    assert.deepEqual(byEndpoint.get(disabled), [1, 1], 'disabled: parked');
    assert.deepEqual(byEndpoint.get(healthy), [2, 0], 'healthy: both due');
  });

  it('the sweep unparks a row parked after its circuit closed, and cancels one parked for a deleted endpoint', async () => {
    const healthy = await endpointWith(2);
    const doomed = await endpointWith(1);
    // What a completion racing a circuit's close, and one racing a delete, leave behind.
    await db.sql`UPDATE delivery_queue SET state = 'parked' WHERE endpoint_id IN (${healthy}, ${doomed})`;
    await db.sql`UPDATE endpoints SET deleted_at = now(), enabled = false WHERE id = ${doomed}`;
    assert.deepEqual(await sweepUnclaimable(db.sql), { parked: 0, cancelled: 1, unparked: 2 });
    assert.deepEqual(
      (await rows(healthy)).map((r) => r.parked),
      [false, false],
    );
    assert.deepEqual(
      (await rows(doomed)).map((r) => [r.status, r.parked]),
      [['cancelled', null]],
    );
    // A parked row that belongs there (its endpoint disabled) stays.
    const off = await endpointWith(1);
    assert.equal((await patch(off, { enabled: false })).status, 200);
    assert.deepEqual(await sweepUnclaimable(db.sql), { parked: 0, cancelled: 0, unparked: 0 });
    assert.deepEqual(
      (await rows(off)).map((r) => r.parked),
      [true],
    );
  });

  it('a success recorded after the reaper took the lease back still counts: never a dead letter', async () => {
    const ep = await endpointWith(2);
    const [a, b] = await claimAll(ep, 0.05);
    await new Promise((r) => setTimeout(r, 150));
    // The database was unreachable when these succeeded; meanwhile the reaper ran: `a` had used
    // its last attempt (dead-lettered), `b` was requeued.
    await db.sql`UPDATE delivery_queue SET attempt_count = 8 WHERE delivery_id = ${a!.id}`;
    assert.deepEqual(await reapExpiredLeases(db.sql, noBackoff(8)), {
      requeued: 1,
      deadLettered: 1,
      cancelled: 0,
    });
    const late = { ...attemptResult(a!, 'delivered'), attempt: 8 };
    const applied = await completeAttempts(db.sql, [late, attemptResult(b!, 'delivered')]);
    assert.equal(applied.size, 2);
    const [ra, rb] = await Promise.all(
      [a!, b!].map(
        async (c) => (await db.sql`SELECT status, dead_at FROM deliveries WHERE id = ${c.id}`)[0]!,
      ),
    );
    assert.deepEqual(ra, { status: 'delivered', dead_at: null });
    assert.deepEqual(rb, { status: 'delivered', dead_at: null });
    const [left] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep}`;
    assert.equal(left!.n, 0, 'the requeued row is settled, not sent again');
  });

  it('a result written well inside its lease skips the late-success lookups (mayBeLate: false)', async () => {
    const ep = await endpointWith(1);
    const [a] = await claimAll(ep, 0.05);
    await new Promise((r) => setTimeout(r, 150));
    assert.deepEqual(await reapExpiredLeases(db.sql, noBackoff(8)), {
      requeued: 1,
      deadLettered: 0,
      cancelled: 0,
    });
    // Judged on time (wrongly, here): the requeued row is left to be sent again, not settled.
    const onTime = { ...attemptResult(a!, 'delivered'), mayBeLate: false };
    assert.equal((await completeAttempts(db.sql, [onTime])).size, 0);
    const [waiting] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep}`;
    assert.equal(waiting!.n, 1);
    // The writer tries a success that was not applied once more as a late one: then it counts.
    assert.equal((await completeAttempts(db.sql, [{ ...onTime, mayBeLate: true }])).size, 1);
    const [row] = await db.sql`SELECT status FROM deliveries WHERE id = ${a!.id}`;
    assert.equal(row!.status, 'delivered');
  });
});
