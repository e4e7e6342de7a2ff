/**
 * The lease reaper follows the one retry policy (src/deliveries/retry-policy.ts): the SQL it
 * decides with gives the numbers nextAttempt gives, with an endpoint's overrides; a reaped
 * delivery waits out the backoff like any failed attempt; it dead-letters by its endpoint's own
 * max_attempts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  backoffMs,
  nextAttempt,
  policyFor,
  type RetryPolicy,
  retrySql,
} from '../../src/deliveries/retry-policy.js';
import { reapExpiredLeases } from '../../src/queue/reap.js';
import {
  claimDue,
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type TestDatabase,
} from '../helpers.js';

const GLOBAL: RetryPolicy = { baseSeconds: 30, capSeconds: 3600, maxAttempts: 8, retryAfterMaxSeconds: 600 };

describe('the reaper and the retry policy', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  /** Claims everything due and lets the leases run out at once. */
  const claimAndExpire = async () => {
    const claimed = await claimDue(db.sql, {
      limit: 1000,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 1000,
      limitedEndpoints: false,
    });
    await db.sql`UPDATE delivery_queue SET lease_expires_at = now() - interval '1 second' WHERE state = 'leased'`;
    return claimed;
  };

  it('the SQL of the policy gives what nextAttempt gives, for the global policy and overrides', async () => {
    const overrides = [
      { maxAttempts: null, retryBaseSeconds: null, retryCapSeconds: null },
      { maxAttempts: 3, retryBaseSeconds: null, retryCapSeconds: null },
      { maxAttempts: null, retryBaseSeconds: 2, retryCapSeconds: 100 },
      { maxAttempts: 12, retryBaseSeconds: 0.5, retryCapSeconds: 7200 },
    ];
    for (const o of overrides) {
      const own = policyFor(GLOBAL, o);
      for (const attempt of [1, 2, 3, 7, 8, 12, 20]) {
        const retry = retrySql(db.sql, GLOBAL, db.sql`e`);
        const [row] = await db.sql<{ exhausted: boolean; backoff: number }[]>`
          SELECT ${retry.exhausted(db.sql`${attempt}::int`)} AS exhausted,
            ${retry.backoffSeconds(db.sql`${attempt}::int`, db.sql`0.37::float8`)} AS backoff
          FROM (SELECT ${o.maxAttempts}::int AS max_attempts, ${o.retryBaseSeconds}::float8 AS retry_base_seconds,
                       ${o.retryCapSeconds}::float8 AS retry_cap_seconds) e`;
        const decided = nextAttempt(attempt, { kind: 'retryable', errorClass: 'http_503' }, own, () => 0.37);
        assert.equal(
          row!.exhausted,
          decided.status === 'dead_letter',
          `exhausted, ${JSON.stringify(o)} #${attempt}`,
        );
        assert.ok(
          Math.abs(row!.backoff * 1000 - backoffMs(attempt, own, () => 0.37)) < 1,
          `backoff, ${JSON.stringify(o)} #${attempt}`,
        );
      }
    }
  });

  it('a reaped delivery waits out its backoff, drawn under its endpoint’s policy', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/slow', {
      retry_base_seconds: 500,
      retry_cap_seconds: 600,
    });
    await enqueueMany(t.send, ep.id, 20);
    await claimAndExpire();
    const reaped = await reapExpiredLeases(db.sql, GLOBAL);
    assert.deepEqual(reaped, { requeued: 20, deadLettered: 0, cancelled: 0 });
    const waits = (
      await db.sql<{ state: string; wait: number }[]>`
        SELECT state, extract(epoch FROM next_attempt_at - now())::float8 AS wait FROM delivery_queue
        WHERE endpoint_id = ${ep.id}`
    ).map((r) => {
      assert.equal(r.state, 'scheduled');
      return r.wait;
    });
    // full jitter after attempt 1: random(0, min(600, 500·2)) = up to 600 s, never more
    assert.ok(
      waits.every((w) => w >= -1 && w <= 600),
      `waits within the ceiling: ${waits}`,
    );
    assert.ok(waits.filter((w) => w > 5).length >= 10, `most wait, they are not all due now: ${waits}`);
  });

  it("dead-letters by the endpoint's own max_attempts, not the global one", async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/once', { max_attempts: 1 });
    await enqueueMany(t.send, ep.id, 1);
    await claimAndExpire();
    const reaped = await reapExpiredLeases(db.sql, GLOBAL);
    assert.equal(reaped.deadLettered, 1);
    const [row] = await db.sql`SELECT status, attempt_count FROM deliveries WHERE endpoint_id = ${ep.id}`;
    assert.deepEqual({ ...row }, { status: 'dead_letter', attempt_count: 1 });
  });
});
