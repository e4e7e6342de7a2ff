/**
 * Which attempts count against max_attempts (src/deliveries/retry-policy.ts isCharged): an
 * attempt our own shutdown cut short does not, nor one that sent nothing (secret_unavailable).
 * With max_attempts 2 a delivery gets two real attempts, however many such ones came first.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { runHookpost } from '../cli/process.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const KEY = 'dispatcher-key-0123456789';
const LOST_KEY = 'a-key-this-dispatcher-lacks';

describe('attempts that are not charged', () => {
  let db: TestDatabase;
  const receivers: Receiver[] = [];
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  const delivery = async (endpointId: string) =>
    (
      await db.sql<{ status: string; attempt_count: number }[]>`
        SELECT status, attempt_count FROM deliveries WHERE endpoint_id = ${endpointId}`
    )[0]!;
  const attempts = async (endpointId: string) =>
    (
      await db.sql<{ attempt: number; error_class: string | null }[]>`
        SELECT attempt, error_class FROM delivery_attempts WHERE endpoint_id = ${endpointId} ORDER BY started_at`
    ).map((a) => `${a.attempt}:${a.error_class}`);

  it('an attempt cut by shutdown costs nothing: max_attempts 2 still gets two real attempts after the restart', async () => {
    const t = await createTestApp(db);
    // The first request hangs until the dispatcher gives up on it at shutdown; then 503s.
    let hang = true;
    const hanging: http.ServerResponse[] = [];
    const receiver = await startReceiver((_req, res) =>
      hang ? hanging.push(res) : res.writeHead(503).end(),
    );
    receivers.push(receiver);
    const ep = await createEndpoint(t, receiver, { max_attempts: 2 });
    await enqueueMany(t.send, ep.id, 1);
    const env = {
      DATABASE_URL: db.url,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_POLL_INTERVAL_MS: '100',
      HOOKPOST_SHUTDOWN_TIMEOUT_MS: '300',
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.02',
    };
    const first = runHookpost(['dispatcher'], env);
    await waitFor('the attempt to reach the partner', () => hanging.length === 1);
    assert.equal(await first.stop('SIGTERM'), 0, first.output());
    assert.deepEqual(await attempts(ep.id), ['1:shutdown']);
    assert.deepEqual({ ...(await delivery(ep.id)) }, { status: 'failed', attempt_count: 0 }, 'not charged');

    hang = false;
    const second = runHookpost(['dispatcher'], env);
    try {
      await waitFor('the dead letter', async () => (await delivery(ep.id)).status === 'dead_letter');
    } finally {
      await second.stop();
      for (const res of hanging) res.destroy();
    }
    assert.equal((await delivery(ep.id)).attempt_count, 2);
    assert.equal(receiver.requests.length, 3, 'the cut attempt, then two real ones');
    assert.deepEqual(await attempts(ep.id), ['1:shutdown', '1:http_503', '2:http_503']);
  });

  it('an attempt that sent nothing (secret_unavailable) costs nothing: delivered once the key is back', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const lostApp = await createTestApp(db, { HOOKPOST_SECRET_KEY: LOST_KEY });
    const ep = await createEndpoint(lostApp, receiver, { max_attempts: 2 });
    await enqueueMany(lostApp.send, ep.id, 1);
    // A high breaker threshold lets every retry run (the breaker would park the delivery).
    const blind = await startTestDispatcher(db, {
      HOOKPOST_SECRET_KEY: KEY,
      HOOKPOST_BREAKER_THRESHOLD: '1000',
    });
    try {
      await waitFor('four attempts that sent nothing', async () => (await attempts(ep.id)).length >= 4);
    } finally {
      await blind.stop();
    }
    assert.ok((await attempts(ep.id)).every((a) => a === '1:secret_unavailable'));
    assert.deepEqual({ ...(await delivery(ep.id)) }, { status: 'failed', attempt_count: 0 }, 'not charged');
    assert.equal(receiver.requests.length, 0);

    const seeing = await startTestDispatcher(db, {
      HOOKPOST_SECRET_KEY: KEY,
      HOOKPOST_SECRET_KEY_PREVIOUS: LOST_KEY,
    });
    try {
      await waitFor('the delivery', async () => (await delivery(ep.id)).status === 'delivered');
    } finally {
      await seeing.stop();
    }
    assert.deepEqual({ ...(await delivery(ep.id)) }, { status: 'delivered', attempt_count: 1 });
    assert.equal(receiver.requests.length, 1);
  });
});
