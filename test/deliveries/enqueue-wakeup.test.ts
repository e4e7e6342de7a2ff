/**
 * The enqueue's round trips and its wake-up: the NOTIFY and the endpoint check travel together
 * after BEGIN, and a NOTIFY sent inside the transaction is heard at its commit
 * only; the Waker decides when a request carries it (takeForCommit) and when it debounces.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Sql } from '../../src/db/connect.js';
import { enqueue } from '../../src/deliveries/enqueue.js';
import { createWaker, WAKEUP_CHANNEL } from '../../src/queue/wakeup.js';
import { type CuttableProxy, startProxy } from '../faults/tcp-proxy.js';
import { createTestApp, createTestDatabase, type TestDatabase, waitFor } from '../helpers.js';

describe('enqueue: round trips and the wake-up NOTIFY', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let viaProxy: Sql;
  let endpointId: string;
  let heard = 0;
  let unlisten: () => Promise<void>;

  before(async () => {
    db = await createTestDatabase();
    const { send } = await createTestApp(db);
    endpointId = (await (await send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
    proxy = await startProxy(Number(new URL(db.url).port));
    viaProxy = connect(proxy.via(db.url), { max: 1 });
    ({ unlisten } = await db.sql.listen(WAKEUP_CHANNEL, () => heard++));
  });
  after(async () => {
    await unlisten?.();
    await viaProxy?.end({ timeout: 5 });
    await proxy?.close();
    await db?.drop();
  });

  const producer = { keyId: 'admin', tenantId: null, operations: true };
  /** A waker whose every request carries the NOTIFY itself; counts the after-commit pokes. */
  let pokes = 0;
  const carrying = { takeForCommit: () => true, poke: () => void pokes++ };
  const debouncing = { takeForCommit: () => false, poke: () => void pokes++ };
  const item = (endpoint = endpointId) => ({
    tenantId: null,
    endpointId: endpoint,
    eventType: 't',
    eventId: null,
    orderingKey: null,
    idempotencyKey: null,
    payload: Buffer.from('{"n":1}'),
  });

  it('takes four round trips: BEGIN, the NOTIFY with the endpoint check, the statement, COMMIT', async () => {
    const heardBefore = heard;
    await enqueue(viaProxy, producer, [item(), item()], { waker: carrying }); // statements' first use
    const before = proxy.turns();
    await enqueue(viaProxy, producer, [item(), item()], { waker: carrying });
    // Five before 2026-12-02 (the NOTIFY after the commit). Not fewer: BEGIN pipelined on a
    // reserved connection saved one more, but postgres.js 3.4.9 loses reserved connections when
    // the server goes away under them (porsager/postgres#1195, #1199).
    assert.equal(proxy.turns() - before, 4);
    // Both NOTIFYs heard here, not late in the next test, which counts them.
    await waitFor('both NOTIFYs heard', () => heard >= heardBefore + 2);
  });

  it('is heard at commit when asked for, and not when the enqueue fails or did not ask', async () => {
    const start = heard;
    const pokesBefore = pokes;
    await enqueue(db.sql, producer, [item()], { waker: carrying });
    await waitFor('the NOTIFY sent with the commit', () => heard > start);
    const afterCommit = heard;
    await assert.rejects(enqueue(db.sql, producer, [item('ep_missing')], { waker: carrying }), /not found/);
    await enqueue(db.sql, producer, [item()]);
    await sleep(300);
    assert.equal(heard, afterCommit, 'a rolled-back NOTIFY is never sent, and none unless asked for');
    assert.equal(pokes, pokesBefore, 'a request that carried the NOTIFY asks for no other');
    await enqueue(db.sql, producer, [item()], { waker: debouncing });
    assert.equal(pokes, pokesBefore + 1, 'one that did not asks for the debounced NOTIFY after its commit');
  });

  it('lets a request carry the NOTIFY only when none was sent within the interval; else debounces', async () => {
    const waker = createWaker(db.sql, 200);
    try {
      assert.equal(waker.takeForCommit(), true, 'nothing sent yet: this request carries it');
      assert.equal(waker.takeForCommit(), false, 'within the interval of the one carried');
      const start = heard;
      waker.poke(); // schedules the trailing NOTIFY at the end of the interval
      await sleep(250);
      assert.equal(waker.takeForCommit(), false, 'just sent by the trailing timer');
      await waitFor('the trailing NOTIFY', () => heard > start);
      await sleep(250);
      assert.equal(waker.takeForCommit(), true, 'an interval after the last one');
    } finally {
      waker.close();
    }
  });
});
