/**
 * The backlog guard counts due rows only up to the limit, and counts less often the more a
 * count costs, so a deep backlog does not make every API process scan it every second.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { countIntervalMs, createBacklogGuard } from '../../src/deliveries/backlog.js';
import { createTestApp, createTestDatabase, enqueueMany, type TestDatabase } from '../helpers.js';

describe('backlog guard', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    const { send } = await createTestApp(db);
    const endpoint = (await (await send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
    await enqueueMany(send, endpoint, 30);
  });
  after(() => db.drop());

  it('counts due rows up to the limit + 1, not the whole backlog', async () => {
    assert.equal(await createBacklogGuard(db.sql, 5).dueCount(), 6);
    assert.equal(await createBacklogGuard(db.sql, 100).dueCount(), 30);
  });

  it('keeps a count for a second, or for 50 times what it took when that is longer', () => {
    assert.equal(countIntervalMs(0.5), 1000);
    assert.equal(countIntervalMs(20), 1000);
    assert.equal(countIntervalMs(130), 6500);
  });

  it('answers from the cached count until it expires', async () => {
    const guard = createBacklogGuard(db.sql, 100);
    assert.equal(await guard.dueCount(), 30);
    await db.sql`UPDATE delivery_queue SET state = 'parked'`;
    assert.equal(await guard.dueCount(), 30, 'within the interval');
    assert.equal(await createBacklogGuard(db.sql, 100).dueCount(), 0, 'a fresh count sees the change');
  });
});
