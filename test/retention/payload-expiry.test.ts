/**
 * Payload expiry (HOOKPOST_PAYLOAD_RETENTION_DAYS) and POST /v1/messages/{id}/expunge: the payload
 * bytes and response snippets are erased, the metadata stays, the API says payload_expired and a
 * replay is 409 payload_expired; queued deliveries keep their payload until they are sent. Also:
 * two passes never run at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RetentionPolicy, runRetentionPass } from '../../src/retention/pass.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const POLICY: RetentionPolicy = {
  retentionDays: 1,
  payloadRetentionDays: 0.00002, // 1.7 s
  partitionIntervalSeconds: 3600,
  partitionsAhead: 2,
  batchSize: 2,
  pauseMs: 0,
};

describe('payload expiry and expunge', () => {
  let db: TestDatabase;
  let ok: Receiver;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let okEndpoint: string;
  let refusingEndpoint: string;
  let parkedEndpoint: string;
  let refusing: Receiver;
  before(async () => {
    db = await createTestDatabase();
    ok = await startReceiver((_req, res) => res.writeHead(200).end('thanks, partner-secret-response'));
    refusing = await startReceiver((_req, res) => res.writeHead(400).end('rejected body'));
    t = await createTestApp(db);
    const create = async (url: string) => (await (await t.send('POST', '/v1/endpoints', { url })).json()).id;
    okEndpoint = await create(ok.url);
    refusingEndpoint = await create(refusing.url);
    parkedEndpoint = await create(ok.url);
    assert.equal((await t.send('PATCH', `/v1/endpoints/${parkedEndpoint}`, { enabled: false })).status, 200);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all([ok.close(), refusing.close()]);
    await db.drop();
  });

  const enqueue = async (endpointId: string, payload: unknown) => {
    const res = await t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, event_type: 'x', payload });
    assert.equal(res.status, 202);
    const body = await res.json();
    return { messageId: body.message_id as string, deliveryId: body.deliveries[0].id as string };
  };
  const settled = (id: string) =>
    waitFor(`delivery ${id} to settle`, async () => {
      const body = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      return ['delivered', 'dead_letter'].includes(body.status) && body.attempts.length > 0;
    });
  const payloadBytes = async (messageId: string) =>
    (
      await db.sql<{ n: number }[]>`SELECT length(payload)::int AS n FROM messages WHERE id = ${messageId}`
    )[0]!.n;

  it('erases payloads and snippets past the payload window, keeps metadata and queued payloads', async () => {
    const delivered = await enqueue(okEndpoint, { card: '4242' });
    const dead = await enqueue(refusingEndpoint, { card: '5555' });
    const queued = await enqueue(parkedEndpoint, { card: '6666' });
    await settled(delivered.deliveryId);
    await settled(dead.deliveryId);
    await new Promise((r) => setTimeout(r, 2000));
    const outcome = await runRetentionPass(db.sql, POLICY, { force: true });
    assert.ok(outcome.ran);
    assert.equal(outcome.report.payloadsExpired, 2, 'the two settled messages, in batches of 2');
    assert.equal(outcome.report.snippetsErased, 2);
    assert.equal(outcome.report.deliveriesRemoved, 0, 'the rows stay: only the payload window has passed');
    // The pass built the index it walks (concurrently; the migration does not build it).
    const [index] = await db.sql<{ valid: boolean }[]>`
      SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'messages_payload_live_idx'::regclass`;
    assert.equal(index!.valid, true);

    for (const id of [delivered.deliveryId, dead.deliveryId]) {
      const body = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      assert.equal(body.payload_expired, true);
      assert.equal(body.payload, null);
      assert.equal(body.event_type, 'x');
      assert.equal(body.attempts.length, 1);
      assert.equal(body.attempts[0].response_snippet, null);
      assert.ok(
        body.attempts[0].status_code === 200 || body.attempts[0].status_code === 400,
        'metadata kept',
      );
    }
    assert.equal(await payloadBytes(delivered.messageId), 0);
    // A queued delivery still has to send its payload, however old.
    assert.ok((await payloadBytes(queued.messageId)) > 0);
    const queuedBody = await (await t.send('GET', `/v1/deliveries/${queued.deliveryId}`)).json();
    assert.equal(queuedBody.payload_expired, false);
    assert.deepEqual(queuedBody.payload, { card: '6666' });

    const replay = await t.send('POST', `/v1/deliveries/${dead.deliveryId}/replay`);
    assert.equal(replay.status, 409);
    assert.equal((await replay.json()).error.code, 'payload_expired');
    // A bulk replay skips it too: there is nothing left to send.
    const bulk = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: refusingEndpoint });
    assert.equal((await bulk.json()).replayed, 0);
    const [row] = await db.sql`SELECT status FROM deliveries WHERE id = ${dead.deliveryId}`;
    assert.equal(row!.status, 'dead_letter');
  });

  it('expunges one message at once: payload and snippets erased, queued deliveries cancelled, audited', async () => {
    const delivered = await enqueue(okEndpoint, { email: 'someone@example.com' });
    await settled(delivered.deliveryId);
    const res = await t.send('POST', `/v1/messages/${delivered.messageId}/expunge`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.payload_expired, true);
    assert.equal(body.erased_snippets, 1);
    const read = await (await t.send('GET', `/v1/deliveries/${delivered.deliveryId}`)).json();
    assert.equal(read.payload_expired, true);
    assert.equal(read.payload, null);
    assert.equal(read.status, 'delivered');
    assert.equal(read.attempts[0].response_snippet, null);
    assert.equal(read.attempts[0].status_code, 200);
    const [audit] = await db.sql`SELECT actor, message_id FROM message_expunges WHERE id = ${body.audit_id}`;
    assert.equal(audit!.message_id, delivered.messageId);

    const queued = await enqueue(parkedEndpoint, { email: 'other@example.com' });
    const second = await (await t.send('POST', `/v1/messages/${queued.messageId}/expunge`)).json();
    assert.equal(second.cancelled_deliveries, 1);
    const [q] =
      await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE delivery_id = ${queued.deliveryId}`;
    assert.equal(q!.n, 0, 'nothing left to send');
    const cancelled = await (await t.send('GET', `/v1/deliveries/${queued.deliveryId}`)).json();
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(await payloadBytes(queued.messageId), 0);

    const again = await t.send('POST', `/v1/messages/${queued.messageId}/expunge`);
    assert.equal(again.status, 200, 'repeating an erasure is harmless');
    const unknown = await t.send('POST', '/v1/messages/msg_nope/expunge');
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, 'message_not_found');
    const noToken = await t.request(`/v1/messages/${queued.messageId}/expunge`, { method: 'POST' });
    assert.equal(noToken.status, 401);
  });

  it('never runs two passes at once, and skips a pass that is not due', async () => {
    // Enough old rows that a pass takes several batches with pauses.
    const slow: RetentionPolicy = { ...POLICY, retentionDays: 0.00001, batchSize: 1, pauseMs: 100 };
    for (let i = 0; i < 5; i++) await settled((await enqueue(okEndpoint, { i })).deliveryId);
    await new Promise((r) => setTimeout(r, 1000));
    const [first, second] = await Promise.all([
      runRetentionPass(db.sql, slow, { force: true }),
      new Promise((r) => setTimeout(r, 50)).then(() => runRetentionPass(db.sql, slow, { force: true })),
    ]);
    assert.equal(first.ran, true);
    assert.deepEqual(
      { ran: second.ran, reason: second.ran ? undefined : second.reason },
      {
        ran: false,
        reason: 'busy',
      },
    );
    assert.ok(first.ran && first.report.deliveriesRemoved >= 5);
    const notDue = await runRetentionPass(db.sql, slow, { minIntervalSeconds: 60 });
    assert.deepEqual(
      { ran: notDue.ran, reason: notDue.ran ? undefined : notDue.reason },
      {
        ran: false,
        reason: 'not_due',
      },
    );
  });
});
