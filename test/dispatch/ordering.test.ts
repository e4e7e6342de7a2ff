/**
 * Ordering keys in one process: sequence numbers under concurrent enqueues, a failing head holds
 * back only its own key, a dead-lettered head lets the next go, a replayed one waits its turn,
 * and unkeyed deliveries carry no hookpost-sequence.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

interface Body {
  key: string | null;
  n: number;
}

describe('ordering keys', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let receiver: Receiver;
  /** Keys whose requests the receiver fails with 500. */
  const failing = new Set<string>();

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    receiver = await startReceiver((_req, res, body) => {
      const { key } = JSON.parse(body.toString()) as Body;
      res.writeHead(key !== null && failing.has(key) ? 500 : 200).end();
    });
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  const received = (endpointTag: string) =>
    receiver.requests
      .map((r) => ({ ...(JSON.parse(r.body.toString()) as Body & { ep: string }), headers: r.headers }))
      .filter((r) => r.ep === endpointTag);

  it('3 keys x 100 messages from 4 concurrent clients: each key numbered 1..100, no gap or repeat', async () => {
    const ep = await createEndpoint(t, receiver);
    const client = async (c: number) => {
      for (let j = 0; j < 75; ) {
        // Singles and batches of 5 (item order within a batch is the order of its numbers).
        const size = j % 15 === 0 ? 5 : 1;
        const items = Array.from({ length: size }, (_, i) => ({
          endpoint_id: ep.id,
          event_type: 'seq',
          ordering_key: `k${(j + i) % 3}`,
          payload: { ep: 'seq', key: `k${(j + i) % 3}`, n: c * 1000 + j + i },
        }));
        const res =
          size === 1
            ? await t.send('POST', '/v1/deliveries', items[0], { 'idempotency-key': `c${c}-${j}` })
            : await t.send('POST', '/v1/deliveries/batch', { items });
        assert.equal(res.status, 202, await res.text());
        j += size;
      }
    };
    await Promise.all([0, 1, 2, 3].map(client));
    // A repeated request is the same message: it takes no number.
    const again = await t.send(
      'POST',
      '/v1/deliveries',
      { endpoint_id: ep.id, event_type: 'seq', ordering_key: 'k2', payload: { ep: 'seq', key: 'k2', n: 5 } },
      { 'idempotency-key': 'c0-5' },
    );
    assert.equal(again.status, 200);
    // Unkeyed beside them: no number.
    const plain = await t.send('POST', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'seq',
      payload: { ep: 'seq', key: null, n: -1 },
    });
    assert.equal(plain.status, 202);

    const dispatcher = await startTestDispatcher(db);
    try {
      await waitFor('all 301 delivered', () => received('seq').length >= 301, 30000);
    } finally {
      await dispatcher.stop();
    }
    const got = received('seq');
    assert.equal(got.length, 301, 'one request each (the receiver accepts all)');
    const unkeyed = got.filter((r) => r.key === null);
    assert.equal(unkeyed.length, 1);
    assert.equal(
      unkeyed[0]!.headers['hookpost-sequence'],
      undefined,
      'an unkeyed delivery carries no sequence',
    );
    for (const key of ['k0', 'k1', 'k2']) {
      const mine = got.filter((r) => r.key === key);
      const numbers = mine.map((r) => Number(r.headers['hookpost-sequence']));
      assert.deepEqual(
        numbers,
        Array.from({ length: 100 }, (_, i) => i + 1),
        `${key}: sent in sequence order`,
      );
      // Each client's own messages of a key were accepted one after the other: increasing numbers.
      for (let c = 0; c < 4; c++) {
        const ns = mine.filter((r) => Math.floor(r.n / 1000) === c).map((r) => r.n);
        assert.deepEqual(
          ns,
          [...ns].sort((a, b) => a - b),
          `${key}: client ${c}'s messages in its order`,
        );
      }
    }
  });

  it('a head that keeps failing holds back only its key; other keys and unkeyed flow past it', async () => {
    const ep = await createEndpoint(t, receiver);
    failing.add('stuck');
    const items = [
      ...Array.from({ length: 5 }, (_, n) => ({ key: 'stuck', n })),
      ...Array.from({ length: 100 }, (_, i) => ({ key: `k${i % 20}`, n: Math.floor(i / 20) })),
      ...Array.from({ length: 50 }, (_, n) => ({ key: null, n })),
    ].map((p) => ({
      endpoint_id: ep.id,
      event_type: 'hol',
      ...(p.key ? { ordering_key: p.key } : {}),
      payload: { ep: 'hol', ...p },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    // Fast retries and a breaker that does not open: the head is retried all along.
    const dispatcher = await startTestDispatcher(db, {
      HOOKPOST_BREAKER_THRESHOLD: '100000',
      HOOKPOST_MAX_ATTEMPTS: '1000',
    });
    try {
      await waitFor(
        'the 150 others delivered',
        () => received('hol').filter((r) => r.key !== 'stuck').length >= 150,
      );
      await waitFor(
        'the stuck head retried',
        () => received('hol').filter((r) => r.key === 'stuck').length >= 5,
      );
      const stuck = received('hol').filter((r) => r.key === 'stuck');
      assert.ok(
        stuck.every((r) => r.n === 0 && r.headers['hookpost-sequence'] === '1'),
        'only the head of the stuck key is ever sent',
      );
      for (let k = 0; k < 20; k++) {
        const mine = received('hol').filter((r) => r.key === `k${k}`);
        assert.deepEqual(
          mine.map((r) => r.n),
          [0, 1, 2, 3, 4],
        );
      }
      assert.ok(
        received('hol')
          .filter((r) => r.key === null)
          .every((r) => r.headers['hookpost-sequence'] === undefined),
      );
      // The partner recovers: the rest of the key follows, in order.
      failing.delete('stuck');
      await waitFor('the stuck key drained', async () => {
        const [row] =
          await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${ep.id} AND status <> 'delivered'`;
        return row!.n === 0;
      });
    } finally {
      await dispatcher.stop();
    }
    const firsts = received('hol')
      .filter((r) => r.key === 'stuck')
      .map((r) => r.n);
    assert.deepEqual([...new Set(firsts)], [0, 1, 2, 3, 4]);
  });

  it('a dead-lettered head lets the next go; a replayed one waits behind the head and keeps its number', async () => {
    const ep = await createEndpoint(t, receiver);
    const dispatcher = await startTestDispatcher(db, { HOOKPOST_MAX_ATTEMPTS: '3' });
    try {
      failing.add('dl');
      const res = await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'dl',
        ordering_key: 'dl',
        payload: { ep: 'dl', key: 'dl', n: 0 },
      });
      const deadId = (await res.json()).deliveries[0].id as string;
      await waitFor('the head dead-lettered', async () => {
        const [row] = await db.sql`SELECT status FROM deliveries WHERE id = ${deadId}`;
        return row!.status === 'dead_letter';
      });
      failing.delete('dl');
      // The next ones of the key go once the head is settled.
      for (const n of [1, 2]) {
        await t.send('POST', '/v1/deliveries', {
          endpoint_id: ep.id,
          event_type: 'dl',
          ordering_key: 'dl',
          payload: { ep: 'dl', key: 'dl', n },
        });
      }
      await waitFor('1 and 2 delivered', () => received('dl').filter((r) => r.n > 0).length >= 2);
      // Replay: held, released as the key's head (none now), sent again with its own number.
      const replay = await t.send('POST', `/v1/deliveries/${deadId}/replay`);
      assert.ok(replay.status < 300, await replay.text());
      await waitFor('the replay delivered', () => received('dl').filter((r) => r.n === 0).length >= 4);
    } finally {
      await dispatcher.stop();
    }
    const got = received('dl');
    assert.deepEqual(
      got.map((r) => [r.n, r.headers['hookpost-sequence']]),
      [
        [0, '1'],
        [0, '1'],
        [0, '1'],
        [1, '2'],
        [2, '3'],
        [0, '1'],
      ],
      'the receiver sees the stale number 1 after 3: a replay, detectable',
    );
  });
});
