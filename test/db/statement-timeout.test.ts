/**
 * The API pool's statement_timeout (HOOKPOST_API_STATEMENT_TIMEOUT_MS): a request whose statement
 * runs past it is answered 503 `database_busy` with Retry-After, never 500 and never a connection
 * held for as long as the query wants; migrations and the CONCURRENTLY index builds, which run on
 * the same pool, are not cut by it, and give the connection back with its bound.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { migrate } from '../../src/db/migrate.js';
import { ensureMessageIndexes } from '../../src/deliveries/message-indexes.js';
import { createTestApp, createTestDatabase, type TestDatabase, testConfig } from '../helpers.js';

describe('statement timeout of the API pool', () => {
  let db: TestDatabase;
  let bounded: Sql;

  before(async () => {
    db = await createTestDatabase(false);
  });
  after(async () => {
    await bounded?.end({ timeout: 5 });
    await db.drop();
  });

  it('is a setting, a few seconds by default', () => {
    assert.equal(testConfig().apiStatementTimeoutMs, 5000);
    assert.equal(testConfig({ HOOKPOST_API_STATEMENT_TIMEOUT_MS: '250' }).apiStatementTimeoutMs, 250);
    assert.throws(
      () => testConfig({ HOOKPOST_API_STATEMENT_TIMEOUT_MS: '0' }),
      /HOOKPOST_API_STATEMENT_TIMEOUT_MS/,
    );
  });

  it('does not cut migrations or index builds, and the connection keeps its bound afterwards', async () => {
    // One connection with a 1 ms bound: every migration file takes longer than that.
    const tight = connect(db.url, { max: 1, statementTimeoutMs: 1 });
    try {
      assert.ok((await migrate(tight)).length > 0);
      assert.equal(await ensureMessageIndexes(tight), true);
      const [row] = await tight<{ statement_timeout: string }[]>`SHOW statement_timeout`;
      assert.equal(row?.statement_timeout, '1ms');
      await assert.rejects(tight`SELECT pg_sleep(0.05)`, (e: { code?: string }) => e.code === '57014');
    } finally {
      await tight.end({ timeout: 5 });
    }
  });

  it('answers 503 database_busy with Retry-After when a statement runs past it', async () => {
    bounded = connect(db.url, { max: 2, statementTimeoutMs: 200 });
    const t = await createTestApp(db, {}, { sql: bounded });
    // Another session holds the table the list reads: the list's statement waits, and is cancelled
    // at 200 ms instead of holding its connection until the lock goes.
    const holder = await db.sql.reserve();
    try {
      await holder`BEGIN`;
      await holder`LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`;
      const res = await t.send('GET', '/v1/deliveries?event_type=order.created');
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '2');
      assert.equal((await res.json()).error.code, 'database_busy');
    } finally {
      await holder`ROLLBACK`;
      holder.release();
    }
    // The lock gone, the same request is answered from the same pool.
    const again = await t.send('GET', '/v1/deliveries?event_type=order.created');
    assert.equal(again.status, 200);
  });
});
