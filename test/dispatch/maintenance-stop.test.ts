/**
 * Stopping the maintenance tasks waits for the ones still running, so the dispatcher closes its
 * pool only after their last statement (src/dispatch/maintenance.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMaintenance } from '../../src/dispatch/maintenance.js';
import { createLogger } from '../../src/log.js';
import { createTestDatabase, type TestDatabase, testConfig } from '../helpers.js';

describe('maintenance stop', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  it('resolves only once the task that was running has finished', async () => {
    // The breaker tick runs every 50 ms with this cooldown; it reads endpoint_health.
    const config = testConfig({ HOOKPOST_BREAKER_COOLDOWN_SECONDS: '0.25' });
    const locker = await db.sql.reserve();
    await locker`BEGIN`;
    await locker`LOCK TABLE endpoint_health IN ACCESS EXCLUSIVE MODE`;
    const stop = startMaintenance(db.sql, config, createLogger('silent'), () => {});
    // Until a task is waiting on the lock, that is, running.
    for (let waited = 0; ; waited += 20) {
      const [row] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      if (row!.n > 0) break;
      assert.ok(waited < 5000, 'no maintenance task started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    let stopped = false;
    const stopping = stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(stopped, false, 'the stopper resolved while a task was still running');
    await locker`ROLLBACK`;
    locker.release();
    await stopping;
    assert.equal(stopped, true);
  });
});
