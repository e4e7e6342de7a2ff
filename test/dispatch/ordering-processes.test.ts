/**
 * Ordering keys across real dispatcher processes: 500 keys x 20 deliveries to a receiver that
 * fails 20% of requests at random, two dispatchers, one of them killed with kill -9 mid-run.
 * Every key's payloads must first succeed in enqueue order; unkeyed ones beside them arrive too.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { runHookpost, UNUSED_DATA_DIR } from '../cli/process.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const KEYS = 500;
const PER_KEY = 20;
const UNKEYED = 1000;

interface Body {
  key: string | null;
  n: number;
}

describe('ordering keys with dispatcher processes', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let receiver: Receiver;
  /** First successful receipt of each payload, in the order the receiver answered them. */
  const firsts: (Body & { sequence: string | undefined })[] = [];
  const seen = new Set<string>();

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    // Every answer waits 5 ms, so a dispatcher always has requests in flight: the kill below
    // then surely lands mid-flight (answered at once, a kill could find none and the check at
    // the end failed once on a bare machine).
    const answer = (res: http.ServerResponse, status: number) =>
      setTimeout(() => res.writeHead(status).end(), 5);
    receiver = await startReceiver((req, res, body) => {
      if (Math.random() < 0.2) {
        answer(res, 500);
        return;
      }
      const p = JSON.parse(body.toString()) as Body;
      const id = `${p.key}/${p.n}`;
      if (!seen.has(id)) {
        seen.add(id);
        firsts.push({ ...p, sequence: req.headers['hookpost-sequence'] as string | undefined });
      }
      answer(res, 200);
    });
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  it('500 keys x 20 with 20% failures, two dispatchers, one kill -9: every key in enqueue order', async () => {
    const ep = await createEndpoint(t, receiver);
    const env = {
      DATABASE_URL: db.url,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_DATA_DIR: UNUSED_DATA_DIR,
      HOOKPOST_POLL_INTERVAL_MS: '100',
      HOOKPOST_LEASE_SECONDS: '3',
      HOOKPOST_REQUEST_TIMEOUT_MS: '1000',
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.05',
      // 20% random failures: 30 attempts make a dead letter (0.2^30) impossible in practice
      HOOKPOST_MAX_ATTEMPTS: '30',
      HOOKPOST_BREAKER_THRESHOLD: '1000',
      HOOKPOST_DISPATCH_CONCURRENCY: '64',
    };
    const a = runHookpost(['dispatcher'], env);
    const b = runHookpost(['dispatcher'], env);
    let killed = false;
    try {
      // Enqueued while both run, in batches of 1000: item i is key k(i % 500), its n-th message.
      const all = [
        ...Array.from({ length: KEYS * PER_KEY }, (_, i) => ({
          key: `k${i % KEYS}`,
          n: Math.floor(i / KEYS),
        })),
        ...Array.from({ length: UNKEYED }, (_, n) => ({ key: null, n })),
      ];
      // Unkeyed interleaved: every tenth item.
      const mixed: typeof all = [];
      const keyed = all.slice(0, KEYS * PER_KEY);
      const unkeyed = all.slice(KEYS * PER_KEY);
      keyed.forEach((p, i) => {
        mixed.push(p);
        if (i % 10 === 9 && unkeyed.length > 0) mixed.push(unkeyed.shift()!);
      });
      for (let start = 0; start < mixed.length; start += 1000) {
        const items = mixed.slice(start, start + 1000).map((p) => ({
          endpoint_id: ep.id,
          event_type: 'ordered',
          ...(p.key === null ? {} : { ordering_key: p.key }),
          payload: p,
        }));
        const res = await t.send('POST', '/v1/deliveries/batch', { items });
        assert.equal(res.status, 202);
        if (!killed && firsts.length >= 2000) {
          a.child.kill('SIGKILL');
          killed = true;
        }
      }
      if (!killed) {
        await waitFor('2,000 delivered before the kill', () => firsts.length >= 2000, 60000);
        a.child.kill('SIGKILL');
        killed = true;
      }
      await a.exited;
      await waitFor('every payload delivered', () => firsts.length >= KEYS * PER_KEY + UNKEYED, 120000);
    } finally {
      if (!killed) a.child.kill('SIGKILL');
      assert.equal(await b.stop(), 0, b.output());
    }
    const byKey = new Map<string, (Body & { sequence: string | undefined })[]>();
    for (const f of firsts) {
      if (f.key === null) {
        assert.equal(f.sequence, undefined, 'unkeyed deliveries carry no sequence');
        continue;
      }
      let list = byKey.get(f.key);
      if (!list) {
        list = [];
        byKey.set(f.key, list);
      }
      list.push(f);
    }
    assert.equal(byKey.size, KEYS);
    const expected = Array.from({ length: PER_KEY }, (_, n) => n);
    for (const [key, list] of byKey) {
      assert.deepEqual(
        list.map((f) => f.n),
        expected,
        `${key}: first successful receipts in enqueue order`,
      );
      assert.deepEqual(
        list.map((f) => Number(f.sequence)),
        expected.map((n) => n + 1),
        `${key}: numbered 1..${PER_KEY}`,
      );
    }
    // The kill was mid-flight: requests the victim sent whose results it never wrote.
    const [logged] =
      await db.sql`SELECT count(*)::int AS n FROM delivery_attempts WHERE endpoint_id = ${ep.id}`;
    assert.ok(receiver.requests.length > logged!.n, 'the killed dispatcher had attempts in flight');
    const [left] = await db.sql`
      SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${ep.id} AND status <> 'delivered'`;
    assert.equal(left!.n, 0, 'everything settled as delivered');
  });
});
