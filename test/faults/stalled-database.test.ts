/**
 * A database that stops answering without closing the connection (a network that drops
 * packets, a server frozen by the host): a dispatcher told to stop still stops by its deadline
 * (shutdown timeout + 5 s for the results), reporting what it could not write, instead of
 * waiting forever on a statement that will never answer.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { CompletionWriter } from '../../src/dispatch/completions.js';
import { createLogger } from '../../src/log.js';
import {
  createTestApp,
  createTestDatabase,
  deliveredResult,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

describe('a database that stops answering', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let dispatchSql: Sql;
  let receiver: Receiver;
  const held: http.ServerResponse[] = [];

  before(async () => {
    db = await createTestDatabase();
    proxy = await startProxy(Number(new URL(db.url).port));
    dispatchSql = connect(proxy.via(db.url), { max: 4 });
    receiver = await startReceiver((_req, res) => held.push(res));
  });
  after(async () => {
    await proxy.close();
    await dispatchSql.end({ timeout: 1 });
    await receiver.close();
    await db.drop();
  });

  it('does not hold a dispatcher past its shutdown deadline', async () => {
    const t = await createTestApp(db);
    const dispatcher = await startTestDispatcher(
      { ...db, sql: dispatchSql },
      { HOOKPOST_SHUTDOWN_TIMEOUT_MS: '500', HOOKPOST_POLL_INTERVAL_MS: '200' },
    );
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    const send = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'o',
      payload: {},
    });
    assert.equal(send.status, 202);
    await waitFor('the attempt in flight', () => held.length === 1);

    proxy.stall();
    held[0]!.writeHead(200).end(); // its result is written into a database that never answers
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const stopped = await Promise.race([
      dispatcher.stop().then(() => true),
      new Promise<false>((r) => setTimeout(() => r(false), 15000)),
    ]);
    const took = Date.now() - started;
    assert.ok(stopped, 'stop() returned');
    // The deadline is 0.5 s (in-flight) + 5 s (results) from the stop.
    assert.ok(took < 8000, `stopped after ${took} ms`);
  });

  it('counts the results of a write that never answered as unwritten', async () => {
    await proxy.cut(); // ends the stall and the earlier connections
    await proxy.restore();
    const sql = connect(proxy.via(db.url), { max: 1 });
    await sql`SELECT 1`;
    const writer = new CompletionWriter({ sql, log: createLogger('silent'), onWritten: async () => {} });
    proxy.stall();
    writer.add(
      deliveredResult({
        id: 'dlv_never',
        endpointId: 'ep_never',
        leaseToken: '00000000-0000-4000-8000-000000000000',
      }),
      Date.now() + 60_000,
    );
    await waitFor('the write under way', () => writer.waiting === 0);
    // The batch left the waiting list for a write the database never answers: still unwritten.
    assert.equal(await writer.drain(Date.now() + 300), 1);
    await sql.end({ timeout: 0.1 });
  });
});
