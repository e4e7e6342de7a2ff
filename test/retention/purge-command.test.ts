/** `hookpost purge [--dry-run]` as an operator runs it: the built CLI against a test database. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runHookpost } from '../cli/process.js';
import {
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('hookpost purge', () => {
  let db: TestDatabase;
  let receiver: Receiver;
  before(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  it('reports what it would remove, then removes it', async () => {
    const t = await createTestApp(db);
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    const dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    try {
      await enqueueMany(t.send, endpointId, 3);
      await waitFor('3 delivered', async () => {
        const [row] = await db.sql<
          { n: number }[]
        >`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivered'`;
        return row!.n === 3;
      });
    } finally {
      await dispatcher.stop();
    }
    await new Promise((r) => setTimeout(r, 1500));
    // 0.00001 days is 0.86 s: the three are past it.
    const env = { DATABASE_URL: db.url, HOOKPOST_RETENTION_DAYS: '0.00001' };
    const run = async (args: string[]) => {
      const proc = runHookpost(args, env);
      return { code: await proc.exited, output: proc.output() };
    };
    const dry = await run(['purge', '--dry-run']);
    assert.equal(dry.code, 0, dry.output);
    assert.match(dry.output, /dry run: nothing changed/);
    assert.match(dry.output, /deliveries would remove:\s+3/);
    assert.match(dry.output, /messages would remove:\s+3/);
    const [still] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deliveries`;
    assert.equal(still!.n, 3, 'a dry run changes nothing');

    const real = await run(['purge']);
    assert.equal(real.code, 0, real.output);
    assert.match(real.output, /deliveries removed:\s+3/);
    assert.match(real.output, /messages removed:\s+3/);
    const [left] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages`;
    assert.equal(left!.n, 0);

    const bad = await run(['purge', '--now']);
    assert.equal(bad.code, 2);
    const help = await run(['purge', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.output, /--dry-run/);
  });
});
