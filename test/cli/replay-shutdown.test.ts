/**
 * A bulk replay started through the API keeps running after the 202; SIGTERM must stop it
 * between batches, mark its audit row `interrupted` and still exit cleanly, leaving the rest
 * dead-lettered for a rerun.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  TOKEN,
  waitFor,
} from '../helpers.js';
import { freePort, runHookpost } from './process.js';

describe('bulk replay and shutdown', () => {
  let db: TestDatabase;
  let receiver: Receiver;
  before(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver((_req, res) => res.writeHead(400).end());
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  it('SIGTERM interrupts a running bulk replay between batches and exits 0', async () => {
    const t = await createTestApp(db);
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    const items = Array.from({ length: 10 }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 't',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    const dispatcher = await startTestDispatcher(db);
    await waitFor('10 dead letters', async () => {
      const [row] = await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE status = 'dead_letter'`;
      return row!.n === 10;
    });
    await dispatcher.stop();

    const port = await freePort();
    const api = runHookpost(['api'], {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      // One delivery every 2 s: the replay is certainly still running when SIGTERM arrives.
      HOOKPOST_REPLAY_BATCH_SIZE: '1',
      HOOKPOST_REPLAY_RATE_PER_SECOND: '0.5',
    });
    try {
      await waitFor('the API', () =>
        fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      );
      const res = await fetch(`http://127.0.0.1:${port}/v1/dead-letters/replay`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint_id: endpointId }),
      });
      assert.equal(res.status, 202);
      const { audit_id: auditId } = (await res.json()) as { audit_id: string };
      const started = Date.now();
      assert.equal(await api.stop('SIGTERM'), 0, api.output());
      assert.ok(Date.now() - started < 5000, 'shutdown does not wait for the whole replay');
      const [audit] = await db.sql`SELECT state, matched, replayed FROM replay_audit WHERE id = ${auditId}`;
      assert.equal(audit!.state, 'interrupted');
      assert.equal(audit!.matched, 10);
      assert.ok(audit!.replayed >= 1 && audit!.replayed < 10, `replayed ${audit!.replayed}`);
      const [dead] = await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE status = 'dead_letter'`;
      assert.equal(dead!.n, 10 - audit!.replayed, 'the rest stays dead-lettered for a rerun');
    } finally {
      if (api.child.exitCode === null) await api.stop('SIGKILL');
    }
  });
});
