/**
 * The database goes away for longer than a lease while attempts are in flight, then comes back.
 * Enqueue answers 503 database_unavailable with Retry-After at once; results of attempts that
 * succeeded meanwhile are kept and written when it returns (never re-sent, never dead-lettered);
 * the first delivery after the outage arrives within seconds, with nothing restarted.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('database outage', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let apiSql: Sql;
  let dispatchSql: Sql;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;
  let hold = true;
  const held: http.ServerResponse[] = [];

  before(async () => {
    db = await createTestDatabase();
    proxy = await startProxy(Number(new URL(db.url).port));
    // The pools of `hookpost start`: a short connect timeout for the API, the dispatcher's own.
    apiSql = connect(proxy.via(db.url), { max: 4, connectTimeoutSeconds: 2 });
    dispatchSql = connect(proxy.via(db.url), { max: 4, asyncCommit: true });
    t = await createTestApp({ ...db, sql: apiSql });
    receiver = await startReceiver((_req, res) => (hold ? held.push(res) : res.writeHead(200).end()));
    dispatcher = await startTestDispatcher(
      { ...db, sql: dispatchSql },
      {
        HOOKPOST_LEASE_SECONDS: '4.5',
        HOOKPOST_REQUEST_TIMEOUT_MS: '2000',
        // One attempt: a reaped lease dead-letters at once, so a lost result would show.
        HOOKPOST_MAX_ATTEMPTS: '1',
        HOOKPOST_POLL_INTERVAL_MS: '1000',
      },
    );
  });
  after(async () => {
    await proxy.restore().catch(() => {});
    await dispatcher.stop();
    await Promise.all([apiSql.end({ timeout: 1 }), dispatchSql.end({ timeout: 1 })]);
    await proxy.close();
    await receiver.close();
    await db.drop();
  });

  const enqueue = (n: number) =>
    t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, event_type: 'o', payload: { n } });
  let endpointId = '';

  it('503 + Retry-After while down, results kept through it, recovery by itself', async () => {
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    // One batch, so one claim sends all five at once (held well within the request timeout).
    const items = Array.from({ length: 5 }, (_, n) => ({
      endpoint_id: endpointId,
      event_type: 'o',
      payload: { n },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    await waitFor('five attempts in flight', () => held.length === 5);

    await proxy.cut();
    // The attempts succeed while their results cannot be written.
    for (const res of held.splice(0)) res.writeHead(200).end();

    const started = Date.now();
    const refused = await enqueue(99);
    const took = Date.now() - started;
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).error.code, 'database_unavailable');
    assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After is set');
    assert.ok(took < 2000, `answered after ${took} ms`);

    await sleep(5000); // longer than the 4.5 s lease
    hold = false;
    await proxy.restore();
    const back = Date.now();
    const accepted = await waitFor(
      'enqueue to work again',
      async () => ((await enqueue(100)).status === 202 ? true : undefined),
      10000,
    );
    assert.ok(accepted);
    await waitFor('the first delivery after the outage', () => receiver.requests.length === 6, 10000);
    const recovered = Date.now() - back;
    assert.ok(recovered < 6000, `first delivery ${recovered} ms after the database returned`);

    const statuses = await waitFor('every delivery settled', async () => {
      const rows = await db.sql<{ status: string; n: number }[]>`
        SELECT d.status, count(*)::int AS n FROM deliveries d
        LEFT JOIN delivery_queue q ON q.delivery_id = d.id
        WHERE d.endpoint_id = ${endpointId} AND q.delivery_id IS NULL GROUP BY 1`;
      const all = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      return (all.delivered ?? 0) + (all.dead_letter ?? 0) === 6 ? all : undefined;
    });
    assert.deepEqual(
      statuses,
      { delivered: 6 },
      'the five sent during the outage are delivered, not dead letters',
    );
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, 6, 'nothing was sent twice');
  });
});
