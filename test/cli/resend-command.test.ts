/**
 * `hookpost replay --include-delivered` as an operator runs it: the built CLI in a child process
 * resends delivered events of a range (same webhook-ids), a dry run changes nothing, and the
 * options that only make sense for dead letters are refused as bad usage.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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
import { runHookpost } from './process.js';

describe('hookpost replay --include-delivered', () => {
  let db: TestDatabase;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;
  let endpointId: string;
  const run = async (args: string[]) => {
    const proc = runHookpost(args, { DATABASE_URL: db.url, HOOKPOST_REPLAY_RATE_PER_SECOND: '50' });
    const code = await proc.exited;
    return { code, output: proc.output() };
  };
  const delivered = async () =>
    (
      await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${endpointId} AND status = 'delivered'`
    )[0]!.n;

  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    receiver = await startReceiver();
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    await enqueueMany(t.send, endpointId, 3);
    await waitFor('3 delivered', async () => (await delivered()) === 3);
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  it('a dry run counts and changes nothing; the real run resends each delivered one once', async () => {
    const dry = await run([
      'replay',
      '--endpoint',
      endpointId,
      '--since',
      '1h',
      '--include-delivered',
      '--dry-run',
    ]);
    assert.equal(dry.code, 0, dry.output);
    assert.match(dry.output, /dry run: 3 deliveries match; 3 would be resent/);
    assert.equal(receiver.requests.length, 3);

    const real = await run(['replay', '--endpoint', endpointId, '--since', '1h', '--include-delivered']);
    assert.equal(real.code, 0, real.output);
    assert.match(real.output, /resent 3 of 3, skipped 0\. Audit: rpl_\w+/);
    await waitFor('the resends', () => receiver.requests.length === 6);
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    assert.deepEqual(ids.slice(3).sort(), ids.slice(0, 3).sort(), 'the same webhook-ids again');
    const [audit] =
      await db.sql`SELECT filter, replayed, tenant_id FROM replay_audit ORDER BY created_at DESC LIMIT 1`;
    assert.equal(audit!.filter.kind, 'resend');
    assert.equal(audit!.replayed, 3);
    assert.equal(audit!.tenant_id, 'default', "recorded under the endpoint's tenant");
  });

  it('refuses dead-letter-only options and a missing --since with exit code 2', async () => {
    for (const args of [
      ['replay', '--endpoint', endpointId, '--include-delivered'],
      ['replay', '--endpoint', endpointId, '--since', '1h', '--include-delivered', '--status-code', '500'],
    ]) {
      const { code, output } = await run(args);
      assert.equal(code, 2, `${args.join(' ')}: ${output}`);
    }
  });
});
