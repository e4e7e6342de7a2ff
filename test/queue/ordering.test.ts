/**
 * Held rows and the queue-state transitions (deliveries/ordering.ts, queue-state.ts): only a
 * key's head is ever due; disable, re-enable, the breaker probe and a reaped lease never make a
 * held row due; a key left without a head (a settler that died) is found by the safety net.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { breakerTick } from '../../src/endpoints/breaker.js';
import { completeAttempts } from '../../src/queue/complete.js';
import { unholdStrandedHeads } from '../../src/queue/ordering.js';
import { reapExpiredLeases } from '../../src/queue/reap.js';
import {
  claimDue,
  createEndpoint,
  createTestApp,
  createTestDatabase,
  deliveredResult,
  noBackoff,
  type TestDatabase,
} from '../helpers.js';

describe('ordering keys: held rows', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  /** An endpoint with `perKey` deliveries for each key, enqueued in one batch (keys interleaved). */
  async function keyedEndpoint(keys: string[], perKey: number): Promise<string> {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/x');
    const items = Array.from({ length: keys.length * perKey }, (_, i) => ({
      endpoint_id: ep.id,
      event_type: 'x',
      ordering_key: keys[i % keys.length],
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    return ep.id;
  }
  /** The unheld rows per key with their sequence, and whether each is due now. */
  const heads = async (ep: string) =>
    (
      await db.sql<{ ordering_key: string; sequence: string; due: boolean }[]>`
        SELECT ordering_key, sequence::text, state = 'scheduled' AND next_attempt_at <= now() AS due
        FROM delivery_queue WHERE endpoint_id = ${ep} AND state <> 'held' ORDER BY ordering_key`
    ).map((r) => ({ ...r }));
  const claim = () =>
    claimDue(db.sql, {
      limit: 100,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 100,
      limitedEndpoints: false,
    });

  it('one head per key, due; the rest held; the claim takes only heads', async () => {
    const ep = await keyedEndpoint(['a', 'b'], 3);
    assert.deepEqual(await heads(ep), [
      { ordering_key: 'a', sequence: '1', due: true },
      { ordering_key: 'b', sequence: '1', due: true },
    ]);
    // What an operator sees: the heads are due, the rest say what they wait for.
    const listed = await t.send('GET', `/v1/deliveries?endpoint_id=${ep}&limit=10`);
    const shown = (
      (await listed.json()).data as { ordering_key: string; sequence: number; parked: string | null }[]
    )
      .map((d) => `${d.ordering_key}${d.sequence}:${d.parked ?? 'due'}`)
      .sort();
    assert.deepEqual(shown, [
      'a1:due',
      'a2:behind_ordering_key',
      'a3:behind_ordering_key',
      'b1:due',
      'b2:behind_ordering_key',
      'b3:behind_ordering_key',
    ]);
    const claimed = (await claim()).filter((c) => c.endpointId === ep);
    assert.deepEqual(claimed.map((c) => c.sequence).sort(), ['1', '1']);
    // The head of a settles: its next one becomes due, b still waits behind its head in flight.
    const a = claimed.find((c) => c.sequence === '1')!;
    const [row] = await db.sql`SELECT ordering_key FROM delivery_queue WHERE delivery_id = ${a.id}`;
    await completeAttempts(db.sql, [deliveredResult({ ...a, endpointId: ep })]);
    const next = (await heads(ep)).find((h) => h.ordering_key === row!.ordering_key)!;
    assert.deepEqual(next, { ordering_key: row!.ordering_key, sequence: '2', due: true });
    // The reaper dead-letters the other head (lease gone, budget spent): its key moves on too.
    const other = claimed.find((c) => c.id !== a.id)!;
    await db.sql`UPDATE delivery_queue SET lease_expires_at = now() - interval '1 second' WHERE delivery_id = ${other.id}`;
    const reaped = await reapExpiredLeases(db.sql, noBackoff(1));
    assert.equal(reaped.deadLettered, 1);
    assert.deepEqual(
      (await heads(ep)).map((h) => [h.sequence, h.due]),
      [
        ['2', true],
        ['2', true],
      ],
    );
  });

  it('disable parks the heads and leaves held rows held; re-enable and the probe never unhold them', async () => {
    const ep = await keyedEndpoint(['a'], 4);
    assert.equal((await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: false })).status, 200);
    assert.deepEqual(await heads(ep), [{ ordering_key: 'a', sequence: '1', due: false }]);
    assert.equal((await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: true })).status, 200);
    assert.deepEqual(await heads(ep), [{ ordering_key: 'a', sequence: '1', due: true }]);
    // An open circuit whose cooldown is over: the probe is the head, not a held row.
    await db.sql`UPDATE delivery_queue SET state = 'parked' WHERE endpoint_id = ${ep} AND state <> 'held'`;
    await db.sql`UPDATE endpoint_health SET state = 'open', opened_at = now() - interval '1 hour', cooldown_seconds = 1
                 WHERE endpoint_id = ${ep}`;
    await breakerTick(db.sql, t.config.policies.breaker);
    const [probe] = await db.sql`
      SELECT q.sequence::text, q.state FROM endpoint_health h JOIN delivery_queue q ON q.delivery_id = h.probe_delivery_id
      WHERE h.endpoint_id = ${ep}`;
    assert.deepEqual({ ...probe }, { sequence: '1', state: 'scheduled' });
    const [held] = await db.sql`
      SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep} AND state = 'held'`;
    assert.equal(held!.n, 3);
  });

  it('a failed head replayed while it waits stays the head; an expunged head lets the next go', async () => {
    const ep = await keyedEndpoint(['r'], 3);
    const [head] = (await claim()).filter((c) => c.endpointId === ep);
    assert.equal(head!.sequence, '1');
    await completeAttempts(db.sql, [
      {
        deliveryId: head!.id,
        endpointId: ep,
        leaseToken: head!.leaseToken,
        attempt: 1,
        startedAt: new Date(),
        durationMs: 1,
        statusCode: 500,
        outcome: 'retryable',
        errorClass: 'http_500',
        error: null,
        snippet: null,
        status: 'failed',
        delayMs: 3_600_000,
      },
    ]);
    assert.deepEqual(await heads(ep), [{ ordering_key: 'r', sequence: '1', due: false }]);
    const replay = await t.send('POST', `/v1/deliveries/${head!.id}/replay`);
    assert.ok(replay.status < 300, await replay.text());
    assert.deepEqual(
      await heads(ep),
      [{ ordering_key: 'r', sequence: '1', due: true }],
      'due again, still the head',
    );
    const [held] =
      await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep} AND state = 'held'`;
    assert.equal(held!.n, 2);
    // Expunging the head's message cancels it: the next one of the key is released.
    const [msg] = await db.sql`SELECT message_id FROM deliveries WHERE id = ${head!.id}`;
    assert.equal((await t.send('POST', `/v1/messages/${msg!.message_id}/expunge`)).status, 200);
    assert.deepEqual(await heads(ep), [{ ordering_key: 'r', sequence: '2', due: true }]);
  });

  it('the safety net releases the next head of a key whose settler died before releasing', async () => {
    const ep = await keyedEndpoint(['a', 'b', 'c'], 2);
    // As if a completion had committed and its process died before the release.
    await db.sql`DELETE FROM delivery_queue WHERE endpoint_id = ${ep} AND state <> 'held' AND ordering_key IN ('a', 'c')`;
    assert.deepEqual(
      (await heads(ep)).map((h) => h.ordering_key),
      ['b'],
    );
    // Walks in pages (2 keys a page here) and finds both.
    let cursor = null;
    let released = 0;
    do {
      const page: Awaited<ReturnType<typeof unholdStrandedHeads>> = await unholdStrandedHeads(
        db.sql,
        cursor,
        2,
      );
      released += page.released;
      cursor = page.next;
    } while (cursor !== null);
    assert.equal(released, 2);
    assert.deepEqual(
      (await heads(ep)).map((h) => [h.ordering_key, h.sequence]),
      [
        ['a', '2'],
        ['b', '1'],
        ['c', '2'],
      ],
    );
  });
});
