import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { completeAttempts } from '../../src/queue/complete.js';
import { releaseClaims } from '../../src/queue/hand-back.js';
import { reapExpiredLeases } from '../../src/queue/reap.js';
import {
  attemptResult,
  claimDue as claim,
  createTestApp,
  createTestDatabase,
  noBackoff,
  type TestDatabase,
} from '../helpers.js';

const claimDue = (sql: TestDatabase['sql'], limit: number, leaseSeconds: number) =>
  claim(sql, { limit, leaseSeconds, saturated: [], perEndpointLimit: 1000, limitedEndpoints: false });

describe('queue: claims, leases, late finishers', () => {
  let db: TestDatabase;
  let endpointId: string;
  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db);
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
    const items = Array.from({ length: 10 }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 'q',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
  });
  after(() => db.drop());

  it('claims disjoint rows for concurrent claimers', async () => {
    const [a, b] = await Promise.all([claimDue(db.sql, 6, 60), claimDue(db.sql, 6, 60)]);
    assert.equal(a.length + b.length, 10);
    const ids = new Set([...a, ...b].map((c) => c.id));
    assert.equal(ids.size, 10, 'no row claimed twice');
    assert.ok([...a, ...b].every((c) => c.attempt === 1 && c.payload.length > 0));
    assert.equal(await releaseClaims(db.sql, [...a, ...b]), 10);
    const [row] = await db.sql`
      SELECT count(*)::int AS n FROM delivery_queue WHERE lease_expires_at IS NULL AND attempt_count = 0`;
    assert.equal(row!.n, 10, 'released claims are not charged an attempt');
  });

  it("a late finisher whose lease expired cannot overwrite the new owner's result", async () => {
    const [old] = await claimDue(db.sql, 1, 0.05);
    assert.ok(old);
    await new Promise((r) => setTimeout(r, 120));
    assert.deepEqual(await reapExpiredLeases(db.sql, noBackoff(8)), {
      requeued: 1,
      deadLettered: 0,
      cancelled: 0,
    });
    const claims = await claimDue(db.sql, 10, 60);
    const current = claims.find((c) => c.id === old.id);
    assert.ok(current, 'the reaped delivery is due again');
    await releaseClaims(
      db.sql,
      claims.filter((c) => c !== current),
    );
    assert.notEqual(current!.leaseToken, old.leaseToken);
    assert.equal(current!.attempt, 2);

    const applied = await completeAttempts(db.sql, [attemptResult(current!, 'delivered')]);
    assert.deepEqual([...applied], [current!.id]);
    const late = await completeAttempts(db.sql, [attemptResult(old, 'failed')]);
    assert.equal(late.size, 0, 'the stale lease changes nothing');
    const [row] = await db.sql`SELECT status, last_status_code FROM deliveries WHERE id = ${old.id}`;
    assert.equal(row!.status, 'delivered');
    assert.equal(row!.last_status_code, 200);
    const attempts =
      await db.sql`SELECT attempt FROM delivery_attempts WHERE delivery_id = ${old.id} ORDER BY attempt`;
    assert.deepEqual(
      attempts.map((a) => a.attempt),
      [1, 2],
      'both attempts stay in the log',
    );
  });

  it('the reaper dead-letters a delivery that exhausted its attempts', async () => {
    const [claim] = await claimDue(db.sql, 1, 0.01);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await reapExpiredLeases(db.sql, noBackoff(1)), {
      requeued: 0,
      deadLettered: 1,
      cancelled: 0,
    });
    const [row] = await db.sql`SELECT status, last_error_class FROM deliveries WHERE id = ${claim!.id}`;
    assert.equal(row!.status, 'dead_letter');
    assert.equal(row!.last_error_class, 'lease_expired');
  });

  it('the one-statement claim leaves limited endpoints to the locking path', async () => {
    const t = await createTestApp(db);
    const limited = (
      await (
        await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/limited', max_in_flight: 2 })
      ).json()
    ).id as string;
    const items = Array.from({ length: 4 }, (_, i) => ({
      endpoint_id: limited,
      event_type: 'q',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    const options = { limit: 100, leaseSeconds: 60, saturated: [], perEndpointLimit: 1000 };
    const fast = await claim(db.sql, { ...options, limitedEndpoints: false });
    assert.equal(fast.filter((c) => c.endpointId === limited).length, 0, 'not claimed without the lock step');
    await releaseClaims(db.sql, fast);
    const locked = await claim(db.sql, { ...options, limitedEndpoints: true });
    assert.equal(locked.filter((c) => c.endpointId === limited).length, 2, 'max_in_flight 2 holds');
    await releaseClaims(db.sql, locked);
  });
});
