/**
 * A retryable failure is counted by the circuit breaker in the same transaction that writes it
 * (completions.ts `withFailures`, outcomes.ts): once the failure is stored — its retry due, its
 * max_in_flight slot free — the circuit has already opened if it was the threshold's, whatever
 * the follow-up after the write is doing. A count after the commit let another dispatcher claim
 * and send in between (more requests than the threshold to a failing partner). And two counts
 * for one endpoint at once (two dispatchers) add up: neither overwrites the other's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompletionWriter } from '../../src/dispatch/completions.js';
import { createOutcomeHandler } from '../../src/dispatch/outcomes.js';
import { applyOutcomes } from '../../src/endpoints/breaker.js';
import type { CircuitChange } from '../../src/endpoints/lifecycle.js';
import { createLogger } from '../../src/log.js';
import type { ClaimedDelivery } from '../../src/queue/claim.js';
import {
  claimDue,
  createTestApp,
  createTestDatabase,
  deliveredResult,
  type TestDatabase,
  testConfig,
  waitFor,
} from '../helpers.js';

describe('circuit breaker: failures counted in their write, and counted from two dispatchers at once', () => {
  let db: TestDatabase;
  let endpointId: string;
  let claims: ClaimedDelivery[];

  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db);
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
    const items = [1, 2].map((i) => ({ endpoint_id: endpointId, event_type: 'q', payload: { i } }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    claims = await claimDue(db.sql, {
      limit: 2,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 1000,
      limitedEndpoints: false,
    });
    assert.equal(claims.length, 2);
  });
  after(() => db.drop());

  it('opens the circuit in the commit that stores the failure, before any follow-up, and at once', async () => {
    const policy = { ...testConfig().policies.breaker, threshold: 1 };
    const changes: CircuitChange[] = [];
    const outcomes = createOutcomeHandler(db.sql, policy, createLogger('silent'), (c) => changes.push(...c));
    let releaseFollowUp = () => {};
    const followUpHeld = new Promise<void>((resolve) => {
      releaseFollowUp = resolve;
    });
    const writer = new CompletionWriter({
      sql: db.sql,
      log: createLogger('silent'),
      lingerMs: 5000,
      // The follow-up stays held: anything counted only there is not counted yet.
      onWritten: async (batch) => {
        await followUpHeld;
        await outcomes.afterWrite(batch);
      },
      withFailures: outcomes.withFailures,
    });
    const claim = claims[0]!;
    const startedAt = Date.now();
    writer.add(
      deliveredResult(claim, {
        attempt: claim.attempt,
        outcome: 'retryable',
        status: 'failed',
        statusCode: 500,
        delayMs: 0,
      }),
      Date.now() + 60_000,
    );
    const stored = async () =>
      (await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ${claim.id}`)[0]!.status;
    await waitFor('the failure stored', async () => (await stored()) === 'failed', 4000);
    assert.ok(
      Date.now() - startedAt < 2500,
      `a failure does not wait out the linger (${Date.now() - startedAt} ms)`,
    );

    const [health] = await db.sql<{ state: string; consecutive_failures: number }[]>`
      SELECT state, consecutive_failures FROM endpoint_health WHERE endpoint_id = ${endpointId}`;
    assert.deepEqual({ ...health }, { state: 'open', consecutive_failures: 1 });
    const queued = await db.sql<{ state: string }[]>`
      SELECT state FROM delivery_queue WHERE endpoint_id = ${endpointId} AND delivery_id = ${claim.id}`;
    assert.deepEqual(
      queued.map((r) => r.state),
      ['parked'],
      'the retry waits parked, never claimable',
    );
    assert.deepEqual(changes, [{ endpointId, from: 'closed', to: 'open' }], 'reported once committed');

    // The follow-up does not count it a second time.
    releaseFollowUp();
    assert.equal(await writer.drain(), 0);
    const [after] = await db.sql<{ consecutive_failures: number }[]>`
      SELECT consecutive_failures FROM endpoint_health WHERE endpoint_id = ${endpointId}`;
    assert.equal(after!.consecutive_failures, 1);
    assert.equal(changes.length, 1);
  });

  it("adds a count committed while it waited for the circuit's lock, instead of overwriting it", async () => {
    const policy = { ...testConfig().policies.breaker, threshold: 10 };
    const oneFailure = [{ endpointId, hadSuccess: false, trailingFailures: 1, failures: 1 }];
    await db.sql`UPDATE endpoint_health SET state = 'closed', consecutive_failures = 0 WHERE endpoint_id = ${endpointId}`;
    let second: Promise<unknown> | undefined;
    await db.sql.begin(async (tx) => {
      await applyOutcomes(tx, oneFailure, [], policy);
      // The other dispatcher's count starts while this one holds the circuit's row.
      second = applyOutcomes(db.sql, oneFailure, [], policy);
      await waitFor('the second count to wait for the lock', async () => {
        const [row] = await db.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        return row!.n > 0;
      });
    });
    await second;
    const [health] = await db.sql<{ consecutive_failures: number }[]>`
      SELECT consecutive_failures FROM endpoint_health WHERE endpoint_id = ${endpointId}`;
    assert.equal(health!.consecutive_failures, 2);
  });
});
