/**
 * Per-endpoint retry policy: `max_attempts`, `retry_base_seconds`, `retry_cap_seconds` override
 * the global defaults in the dispatcher's decision, and `redelivery_window_seconds` shows the
 * longest time to the last automatic attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { reapExpiredLeases } from '../../src/queue/reap.js';
import {
  claimDue,
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  noBackoff,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('per-endpoint retry policy', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let failing: Receiver;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    failing = await startReceiver((_req, res) => res.writeHead(503).end());
    // The global default stays HOOKPOST_MAX_ATTEMPTS=8; a breaker that never opens here.
    dispatcher = await startTestDispatcher(db, { HOOKPOST_BREAKER_THRESHOLD: '1000' });
  });
  after(async () => {
    await dispatcher.stop();
    await failing.close();
    await db.drop();
  });

  const deadAfter = (endpointId: string) =>
    waitFor(`a dead letter of ${endpointId}`, async () => {
      const [row] = await db.sql<{ attempt_count: number }[]>`
        SELECT attempt_count FROM deliveries WHERE endpoint_id = ${endpointId} AND status = 'dead_letter'`;
      return row?.attempt_count;
    });

  it('max_attempts: 2 dead-letters after 2 attempts while the global default is 8', async () => {
    const own = await createEndpoint(t, failing, { max_attempts: 2 });
    const global = await createEndpoint(t, failing);
    await enqueueMany(t.send, own.id, 1);
    await enqueueMany(t.send, global.id, 1);
    assert.equal(await deadAfter(own.id), 2);
    assert.equal(await deadAfter(global.id), 8);
    const [logged] =
      await db.sql`SELECT count(*)::int AS n FROM delivery_attempts WHERE endpoint_id = ${own.id}`;
    assert.equal(logged!.n, 2);

    // A PATCH reaches the dispatcher's endpoint cache: the next delivery gets 3 attempts.
    const patched = await t.send('PATCH', `/v1/endpoints/${own.id}`, { max_attempts: 3 });
    assert.equal(patched.status, 200);
    assert.equal((await patched.json()).max_attempts, 3);
    await db.sql`DELETE FROM delivery_attempts WHERE endpoint_id = ${own.id}`;
    await db.sql`UPDATE deliveries SET status = 'cancelled' WHERE endpoint_id = ${own.id}`;
    await enqueueMany(t.send, own.id, 1);
    await waitFor('three attempts, then a dead letter', async () => {
      const [row] = await db.sql`
        SELECT attempt_count FROM deliveries WHERE endpoint_id = ${own.id} AND status = 'dead_letter'`;
      return row?.attempt_count === 3;
    });
  });

  it("the lease reaper dead-letters by the endpoint's max_attempts, not the global one", async () => {
    await dispatcher.stop();
    try {
      const own = await createEndpoint(t, 'http://127.0.0.1:9/hook', { max_attempts: 1 });
      await enqueueMany(t.send, own.id, 1);
      const claimed = await claimDue(db.sql, {
        limit: 10,
        leaseSeconds: 0.01,
        saturated: [],
        perEndpointLimit: 1000,
        limitedEndpoints: false,
      });
      assert.ok(claimed.some((c) => c.endpointId === own.id));
      await new Promise((r) => setTimeout(r, 50));
      const reaped = await reapExpiredLeases(db.sql, noBackoff(8));
      assert.equal(reaped.deadLettered, 1);
      const [row] = await db.sql`SELECT status FROM deliveries WHERE endpoint_id = ${own.id}`;
      assert.equal(row!.status, 'dead_letter');
    } finally {
      dispatcher = await startTestDispatcher(db, { HOOKPOST_BREAKER_THRESHOLD: '1000' });
    }
  });

  it('shows the overrides and the redelivery window', async () => {
    const ep = await createEndpoint(t, 'https://partner.example/hook', {
      max_attempts: 3,
      retry_base_seconds: 1,
      retry_cap_seconds: 3,
    });
    const shown = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.equal(shown.max_attempts, 3);
    assert.equal(shown.retry_base_seconds, 1);
    assert.equal(shown.retry_cap_seconds, 3);
    // 3 attempts × 15 s timeout + backoff ceilings min(3, 1·2) + min(3, 1·4) = 45 + 2 + 3
    assert.equal(shown.redelivery_window_seconds, 50);
    const plain = await createEndpoint(t, 'https://partner.example/hook');
    const defaults = await (await t.send('GET', `/v1/endpoints/${plain.id}`)).json();
    assert.equal(defaults.max_attempts, null);
    // the global 8 attempts, base 30 s, cap 3600 s: 8 × 15 + 60 + 120 + 240 + 480 + 960 + 1920 + 3600
    assert.equal(defaults.redelivery_window_seconds, 7500);
    // Back to the global default.
    const cleared = await (await t.send('PATCH', `/v1/endpoints/${ep.id}`, { max_attempts: null })).json();
    assert.equal(cleared.max_attempts, null);
    assert.equal(cleared.retry_cap_seconds, 3);
  });

  it('refuses values out of bounds with a 400', async () => {
    const bad: Record<string, unknown>[] = [
      { max_attempts: 0 },
      { max_attempts: 51 },
      { max_attempts: 2.5 },
      { max_attempts: '2' },
      { retry_base_seconds: 0 },
      { retry_base_seconds: -1 },
      { retry_cap_seconds: 604_801 },
      { retry_base_seconds: 10, retry_cap_seconds: 5 },
      // above the global cap (HOOKPOST_RETRY_CAP_SECONDS, 3600 here) with no cap of its own
      { retry_base_seconds: 7200 },
    ];
    const ep = await createEndpoint(t, 'https://partner.example/hook');
    for (const fields of bad) {
      for (const [method, path] of [
        ['POST', '/v1/endpoints'],
        ['PATCH', `/v1/endpoints/${ep.id}`],
      ] as const) {
        const res = await t.send(method, path, {
          ...(method === 'POST' && { url: 'https://a.example' }),
          ...fields,
        });
        assert.equal(res.status, 400, `${method} ${JSON.stringify(fields)}`);
        const body = await res.json();
        assert.equal(body.error.code, 'validation_failed');
      }
    }
    // A PATCH is checked against what is stored: a cap below the endpoint's own base is refused.
    const based = await createEndpoint(t, 'https://partner.example/hook', { retry_base_seconds: 10 });
    const lower = await t.send('PATCH', `/v1/endpoints/${based.id}`, { retry_cap_seconds: 5 });
    assert.equal(lower.status, 400);
    assert.equal((await lower.json()).error.details[0].field, 'retry_cap_seconds');
    assert.equal((await t.send('PATCH', `/v1/endpoints/${based.id}`, { retry_cap_seconds: 20 })).status, 200);
  });
});
