/**
 * A short claim says when the next row it did not take is due, so the claim loop knows how long
 * to sleep without a query of its own; a full claim does not (there may be more due right now).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ClaimOptions, claimBatch } from '../../src/queue/claim.js';
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

describe('the next due time from a short claim', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db?.drop());

  const options = (limit: number, perEndpointLimit = 100): ClaimOptions => ({
    limit,
    leaseSeconds: 60,
    saturated: [],
    perEndpointLimit,
    limitedEndpoints: false,
  });
  const endpointWith = async (count: number): Promise<string> => {
    const ep = await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json();
    await enqueueMany(t.send, ep.id, count);
    return ep.id as string;
  };
  const postpone = (endpointId: string, rows: number, seconds: number) => db.sql`
    UPDATE delivery_queue SET next_attempt_at = now() + make_interval(secs => ${seconds})
    WHERE delivery_id IN (SELECT delivery_id FROM delivery_queue WHERE endpoint_id = ${endpointId}
                          ORDER BY delivery_id LIMIT ${rows})`;

  it('gives the time of the first waiting row it did not take', async () => {
    const ep = await endpointWith(4);
    await postpone(ep, 1, 30);
    const batch = await claimBatch(db.sql, options(10));
    assert.equal(batch.deliveries.length, 3, 'the three due rows');
    assert.ok(batch.nextDueAt, 'the postponed row is waiting');
    const inSeconds = (batch.nextDueAt.getTime() - Date.now()) / 1000;
    assert.ok(inSeconds > 25 && inSeconds <= 30, `due in ~30 s, not ${inSeconds}`);
    await db.sql`DELETE FROM delivery_queue`;
  });

  it('says "due now" for rows left to a per-endpoint share, and nothing after a full claim', async () => {
    await endpointWith(3);
    const short = await claimBatch(db.sql, options(10, 1));
    assert.equal(short.deliveries.length, 1, "the endpoint's share");
    assert.ok(short.nextDueAt && short.nextDueAt.getTime() <= Date.now(), 'the other two are due');
    const full = await claimBatch(db.sql, options(1));
    assert.equal(full.deliveries.length, 1);
    assert.equal(full.nextDueAt, undefined, 'a full claim leaves the question open');
    const last = await claimBatch(db.sql, options(10));
    assert.deepEqual(
      { rows: last.deliveries.length, next: last.nextDueAt },
      { rows: 1, next: null },
      'the last row, and nothing left',
    );
    await db.sql`DELETE FROM delivery_queue`;
  });

  it('wakes the claim loop for a retry long before the poll interval', async () => {
    let calls = 0;
    const receiver: Receiver = await startReceiver((_req, res) => {
      calls++;
      res.writeHead(calls === 1 ? 500 : 200).end();
    });
    // Only the next-due time can wake the loop for the retry: no NOTIFY comes for it, and the
    // poll interval is a minute.
    const dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '60000' });
    try {
      const ep = await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json();
      const sent = await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 't',
        payload: {},
      });
      assert.equal(sent.status, 202);
      const id = (await sent.json()).deliveries[0].id;
      await waitFor(
        'the retry delivered',
        async () => (await (await t.send('GET', `/v1/deliveries/${id}`)).json()).status === 'delivered',
        10_000,
      );
      assert.equal(receiver.requests.length, 2, 'a failure, then the retry');
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });
});
