/**
 * An expunge while an attempt is in flight: the partner's answer, which echoes the payload back,
 * is not kept, whatever the result; the delivery leaves the queue (cancelled unless delivered,
 * never retried); a keyed head in flight keeps its key's next delivery waiting until it is back.
 * And a replay racing an expunge never queues an erased payload.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { requeueLocked } from '../../src/deliveries/replay.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const SECRET = 'card 4111 1111 1111 1111';

describe('expunge during an attempt', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let slow: Receiver;
  /** Requests the receiver holds until the test answers them, echoing the body back. */
  const waiting: { res: http.ServerResponse; body: Buffer }[] = [];
  const answer = (status: number) => {
    const next = waiting.shift()!;
    next.res.writeHead(status).end(next.body);
  };

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    slow = await startReceiver((_req, res, body) => waiting.push({ res, body }));
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
  });
  after(async () => {
    for (const w of waiting.splice(0)) w.res.writeHead(200).end();
    await dispatcher.stop();
    await slow.close();
    await db.drop();
  });

  const enqueue = async (endpointId: string, payload: unknown, orderingKey?: string) => {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload,
      ...(orderingKey === undefined ? {} : { ordering_key: orderingKey }),
    });
    assert.equal(res.status, 202);
    const body = await res.json();
    return { messageId: body.message_id as string, deliveryId: body.deliveries[0].id as string };
  };
  const expunge = async (messageId: string) => {
    const res = await t.send('POST', `/v1/messages/${messageId}/expunge`);
    assert.equal(res.status, 200);
  };
  /** The delivery as the API shows it, once its attempt has been written. */
  const attempted = (id: string) =>
    waitFor(`the attempt of ${id} to be written`, async () => {
      const body = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      return body.attempts.length > 0 && body.status !== 'in_flight' ? body : undefined;
    });
  const queueState = async (id: string) =>
    (await db.sql<{ state: string }[]>`SELECT state FROM delivery_queue WHERE delivery_id = ${id}`)[0]?.state;
  const storedSnippets = async (id: string) =>
    (
      await db.sql<{ snippet: string | null }[]>`
        SELECT response_snippet AS snippet FROM delivery_attempts WHERE delivery_id = ${id}`
    ).map((r) => r.snippet);

  for (const [status, ends] of [
    [200, 'delivered'],
    [500, 'cancelled'],
  ] as const) {
    it(`an answer ${status} that echoes the payload, written after the erasure, keeps no snippet; the delivery ends ${ends}`, async () => {
      const ep = await createEndpoint(t, slow);
      const sent = await enqueue(ep.id, { note: SECRET });
      await waitFor('the attempt to reach the partner', () => waiting.length === 1);
      assert.ok(waiting[0]!.body.toString().includes(SECRET));
      await expunge(sent.messageId);
      assert.equal(await queueState(sent.deliveryId), 'cancelling', 'still in flight, marked');
      answer(status);
      const shown = await attempted(sent.deliveryId);
      assert.equal(shown.status, ends);
      assert.equal(shown.attempts.length, 1);
      assert.equal(shown.attempts[0].status_code, status);
      assert.equal(shown.attempts[0].response_snippet, null);
      assert.deepEqual(await storedSnippets(sent.deliveryId), [null], 'nothing of the echo is stored');
      assert.equal(await queueState(sent.deliveryId), undefined, 'left the queue: nothing will be retried');
      assert.equal(
        slow.requests.filter((r) => r.headers['webhook-id'] === sent.messageId).length,
        1,
        'sent once',
      );
    });
  }

  it("a keyed head in flight keeps its key's next delivery waiting until it is back", async () => {
    const ep = await createEndpoint(t, slow);
    const head = await enqueue(ep.id, { n: 1, note: SECRET }, 'order-7');
    const next = await enqueue(ep.id, { n: 2 }, 'order-7');
    await waitFor('the head to reach the partner', () => waiting.length === 1);
    await expunge(head.messageId);
    assert.equal(await queueState(next.deliveryId), 'held', 'not released beside a head in flight');
    answer(503);
    assert.equal((await attempted(head.deliveryId)).status, 'cancelled');
    // Now the key moves on: its next delivery is sent.
    await waitFor('the next delivery to reach the partner', () => waiting.length === 1);
    assert.equal(JSON.parse(waiting[0]!.body.toString()).n, 2);
    answer(200);
    assert.equal((await attempted(next.deliveryId)).status, 'delivered');
  });

  it('a replay racing an expunge waits for it and then queues nothing', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/never');
    const sent = await enqueue(ep.id, { note: SECRET });
    // Made a dead letter with no queue row, as the dispatcher would leave it.
    await db.sql`DELETE FROM delivery_queue WHERE delivery_id = ${sent.deliveryId}`;
    await db.sql`UPDATE deliveries SET status = 'dead_letter', dead_at = now() WHERE id = ${sent.deliveryId}`;
    await db.sql`INSERT INTO replay_audit (id, actor, filter, dry_run, matched, replayed) VALUES ('rpl_race', 'test', '{}', false, 1, 0)`;
    const expunging = db.sql.reserve();
    const tx = await expunging;
    try {
      await tx`BEGIN`;
      await tx`UPDATE messages SET payload = ''::bytea, payload_expired_at = now() WHERE id = ${sent.messageId}`;
      const [me] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      const pid = me!.pid;
      const replay = db.sql.begin((replayTx) =>
        requeueLocked(replayTx, [{ id: sent.deliveryId, delayMs: 0 }], 'rpl_race'),
      );
      await waitFor('the replay to wait for the expunge', async () => {
        const [row] = await db.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))`;
        return row!.n > 0;
      });
      await tx`COMMIT`;
      assert.deepEqual(await replay, [], 'nothing requeued');
    } finally {
      tx.release();
    }
    assert.equal(await queueState(sent.deliveryId), undefined);
  });
});
