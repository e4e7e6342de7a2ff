/**
 * `hookpost dead-letters` and `hookpost replay` as an operator runs them: the built CLI in a
 * child process against a test database, checked by its output, exit code and the rows.
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

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('hookpost dead-letters and hookpost replay', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  let receiver: Receiver;
  let endpointId: string;
  const state = { status: 401 };
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const proc = runHookpost(args, { DATABASE_URL: db.url, ...env });
    const code = await proc.exited;
    return { code, output: proc.output() };
  };
  const statuses = async () =>
    (await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE endpoint_id = ${endpointId}`).map(
      (r) => r.status,
    );

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '2',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
    receiver = await startReceiver((_req, res) => res.writeHead(state.status).end());
    // A token in the query string, as some partners hand out: the analysis must not print it.
    const url = `${receiver.url}?token=s3cret-token`;
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url, description: 'crm hooks' })).json()).id;
    await enqueueMany(t.send, endpointId, 3);
    await waitFor(
      '3 dead letters',
      async () => (await statuses()).filter((s) => s === 'dead_letter').length === 3,
    );
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  it('dead-letters prints the analysis as a table with advice', async () => {
    const { code, output } = await run(['dead-letters', '--hours', '24']);
    assert.equal(code, 0, output);
    assert.match(output, /ENDPOINT\s+URL\s+DESCRIPTION\s+DEAD\s+PATTERN\s+ERROR\s+STATUS/);
    const row = output.split('\n').find((l) => l.startsWith(endpointId));
    assert.ok(row, output);
    const origin = new URL(receiver.url);
    assert.ok(row.includes(` ${origin.origin}${origin.pathname} `), row);
    assert.match(row, /\scrm hooks\s+3\s+auth_failure\s+http_401\s+401\s+1\.0\s/);
    assert.doesNotMatch(output, /s3cret/, 'no query string, where partners put tokens');
    assert.match(output, new RegExp(`${endpointId}\\s+Mostly 401/403`));

    const other = await run(['dead-letters', '--endpoint', 'ep_nothing_here']);
    assert.equal(other.code, 0);
    assert.match(other.output, /No dead letters in the last 24 h/);
  });

  it('replay --dry-run reports the matches and changes nothing', async () => {
    const before = await db.sql`SELECT * FROM deliveries ORDER BY id`;
    const { code, output } = await run(['replay', '--endpoint', endpointId, '--since', '1h', '--dry-run']);
    assert.equal(code, 0, output);
    assert.match(output, /dry run: 3 dead letters match; 3 would be replayed, 0 skipped/);
    assert.deepEqual(await db.sql`SELECT * FROM deliveries ORDER BY id`, before);
    assert.equal((await db.sql`SELECT count(*)::int AS n FROM delivery_queue`)[0]!.n, 0);
    const [audit] = await db.sql`SELECT * FROM replay_audit ORDER BY created_at DESC LIMIT 1`;
    assert.equal(audit!.dry_run, true);
    assert.match(audit!.actor, /^cli/);
    assert.equal(audit!.filter.endpoint_id, endpointId);
  });

  it('replay requeues with progress, and the deliveries then arrive', async () => {
    state.status = 200;
    const { code, output } = await run(['replay', '--endpoint', endpointId], {
      HOOKPOST_REPLAY_BATCH_SIZE: '1',
      HOOKPOST_REPLAY_RATE_PER_SECOND: '20',
    });
    assert.equal(code, 0, output);
    assert.match(output, /replaying 3 dead letters of ep_\w+ in batches of 1, at most 20\/s/);
    assert.match(output, /replayed 3\/3 \(100%\)/);
    assert.match(output, /replayed 3 of 3; .* Audit: rpl_\w+/);
    await waitFor('the replayed deliveries', async () => (await statuses()).every((s) => s === 'delivered'));
    const again = await run(['replay', '--endpoint', endpointId]);
    assert.equal(again.code, 0);
    assert.match(again.output, /no dead letters match/);
  });

  it('exits 2 on bad usage and 1 on failure, with --help on each', async () => {
    for (const args of [
      ['dead-letters', '--hours', 'abc'],
      ['dead-letters', '--hours', '0'],
      ['dead-letters', '--frobnicate'],
      ['replay', '--dry-run'],
      ['replay', '--endpoint', endpointId, '--since', 'yesterday'],
      ['replay', '--endpoint', endpointId, '--limit', '-3'],
      ['replay', '--endpoint', endpointId, 'extra'],
    ]) {
      const { code, output } = await run(args);
      assert.equal(code, 2, `${args.join(' ')}: ${output}`);
      assert.match(output, /hookpost: /);
    }
    const missing = await run(['replay', '--endpoint', 'ep_missing']);
    assert.equal(missing.code, 1);
    assert.match(missing.output, /endpoint ep_missing not found/);
    for (const command of ['dead-letters', 'replay']) {
      const help = await run([command, '--help']);
      assert.equal(help.code, 0);
      assert.match(help.output, new RegExp(`^hookpost ${command} `));
    }
  });
});
