import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
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

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('GET /v1/pipeline', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher | undefined;
  const receivers: Receiver[] = [];
  const held: http.ServerResponse[] = [];
  const ids: Record<string, string> = {};

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(async () => {
    for (const res of held) res.writeHead(200).end();
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function endpoint(name: string, handler?: Parameters<typeof startReceiver>[0]) {
    const receiver = await startReceiver(handler);
    receivers.push(receiver);
    ids[name] = (await createEndpoint(t, receiver)).id;
  }

  it('needs the bearer token', async () => {
    const res = await t.request('/v1/pipeline');
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'unauthorized');
  });

  it('starts at zero', async () => {
    const res = await t.send('GET', '/v1/pipeline');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      pending: 0,
      awaiting_retry: 0,
      in_flight: 0,
      dead_letter: 0,
      delivered_last_hour: 0,
      failed_last_hour: 0,
      oldest_pending_age_seconds: 0,
      avg_delivery_ms_last_hour: null,
      open_circuits: 0,
      unrouted_last_hour: 0,
    });
  });

  it('matches the rows in the database after a mixed run', async () => {
    // Oldest of all, but parked for a disabled endpoint: counted as pending, not as the oldest.
    await endpoint('disabled');
    await t.send('PATCH', `/v1/endpoints/${ids.disabled!}`, { enabled: false });
    await enqueueMany(t.send, ids.disabled!, 2);
    await new Promise((r) => setTimeout(r, 300));

    await endpoint('ok');
    await endpoint('rejecting', (_req, res) => res.writeHead(400).end());
    await endpoint('later', (_req, res) => res.writeHead(503, { 'retry-after': '3600' }).end());
    await endpoint('down', (_req, res) => res.writeHead(503).end());
    await endpoint('slow', (_req, res) => held.push(res));
    await enqueueMany(t.send, ids.ok!, 10);
    await enqueueMany(t.send, ids.rejecting!, 2);
    await enqueueMany(t.send, ids.later!, 1);
    await enqueueMany(t.send, ids.down!, 6);
    await enqueueMany(t.send, ids.slow!, 1);

    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '3',
      HOOKPOST_BREAKER_THRESHOLD: '3',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '3600',
    });
    await waitFor('the run to settle', async () => {
      const [s] = await db.sql<
        { delivered: number; dead: number; waiting: number; open: number; leased: number }[]
      >`
        SELECT
          (SELECT count(*)::int FROM deliveries WHERE status = 'delivered') AS delivered,
          (SELECT count(*)::int FROM deliveries WHERE status = 'dead_letter' AND endpoint_id = ${ids.rejecting!}) AS dead,
          (SELECT count(*)::int FROM deliveries WHERE status = 'failed' AND endpoint_id = ${ids.later!}) AS waiting,
          (SELECT count(*)::int FROM endpoint_health WHERE state = 'open' AND endpoint_id = ${ids.down!}) AS open,
          (SELECT count(*)::int FROM delivery_queue WHERE lease_expires_at IS NOT NULL) AS leased`;
      return s!.delivered === 10 && s!.dead === 2 && s!.waiting === 1 && s!.open === 1 && s!.leased === 1;
    });
    assert.equal(held.length, 1);

    const pipeline = await (await t.send('GET', '/v1/pipeline')).json();
    // Counted the way the API reports each delivery's status (src/deliveries/read.ts).
    const [rows] = await db.sql<Record<string, number>[]>`
      SELECT
        count(*) FILTER (WHERE q.delivery_id IS NOT NULL AND q.lease_expires_at IS NULL AND d.status = 'pending')::int AS pending,
        count(*) FILTER (WHERE q.delivery_id IS NOT NULL AND q.lease_expires_at IS NULL AND d.status = 'failed')::int AS awaiting_retry,
        count(*) FILTER (WHERE q.lease_expires_at IS NOT NULL)::int AS in_flight,
        count(*) FILTER (WHERE d.status = 'dead_letter')::int AS dead_letter,
        count(*) FILTER (WHERE d.status = 'delivered')::int AS delivered,
        avg(d.last_duration_ms) FILTER (WHERE d.status = 'delivered')::float8 AS avg_ms,
        (SELECT count(*)::int FROM delivery_attempts WHERE outcome <> 'success') AS failed_attempts,
        (SELECT count(*)::int FROM endpoint_health WHERE state <> 'closed') AS open_circuits,
        extract(epoch FROM now() - min(d.created_at) FILTER (
          WHERE q.delivery_id IS NOT NULL AND d.endpoint_id <> ${ids.disabled!}))::float8 AS oldest_age,
        extract(epoch FROM now() - min(d.created_at) FILTER (
          WHERE d.endpoint_id = ${ids.disabled!}))::float8 AS parked_age
      FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id`;
    const db_ = rows!;

    assert.equal(pipeline.pending, db_.pending);
    assert.equal(pipeline.awaiting_retry, db_.awaiting_retry);
    assert.equal(pipeline.in_flight, db_.in_flight);
    assert.equal(pipeline.dead_letter, db_.dead_letter);
    assert.equal(pipeline.delivered_last_hour, db_.delivered);
    assert.equal(pipeline.failed_last_hour, db_.failed_attempts);
    assert.equal(pipeline.open_circuits, db_.open_circuits);
    assert.ok(Math.abs(pipeline.avg_delivery_ms_last_hour - db_.avg_ms!) < 0.1);
    assert.ok(Math.abs(pipeline.oldest_pending_age_seconds - db_.oldest_age!) < 1);
    assert.ok(
      pipeline.oldest_pending_age_seconds < db_.parked_age! - 0.2,
      'parked deliveries are not the oldest',
    );

    // And the run as designed: what each endpoint was built to produce.
    assert.equal(pipeline.in_flight, 1, 'the held request');
    assert.equal(pipeline.delivered_last_hour, 10);
    assert.equal(pipeline.open_circuits, 1, 'the endpoint that is down');
    assert.ok(pipeline.pending >= 2, 'at least the disabled endpoint’s two');
    assert.ok(pipeline.awaiting_retry >= 1, 'at least the Retry-After one');
    assert.ok(pipeline.dead_letter >= 2, 'at least the two 400s');
    assert.ok(pipeline.failed_last_hour >= 2 + 1 + 3, '400s, the Retry-After one, and the threshold');
    assert.equal(
      pipeline.pending + pipeline.awaiting_retry + pipeline.in_flight + pipeline.dead_letter,
      22 - 10,
    );
  });
});
