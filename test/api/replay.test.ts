/**
 * Replay against real receivers: dead letters are made by receivers that fail, then the
 * receivers recover and the replayed deliveries must arrive with their original webhook-id and
 * payload bytes, paced, with the audit written and nothing else touched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

/** A receiver that answers 503 while `down`, 400 to payloads marked "bad", else 200. */
async function switchableReceiver() {
  const state = { down: true };
  const receiver = await startReceiver((_req, res, body) => {
    if (body.toString().includes('"bad"')) res.writeHead(400).end();
    else res.writeHead(state.down ? 503 : 200).end();
  });
  return { receiver, state };
}

describe('replay', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    // Batches of 2 released at 10/s: 5 deliveries take 0.4 s at least, so pacing is measurable.
    t = await createTestApp(db, { HOOKPOST_REPLAY_BATCH_SIZE: '2', HOOKPOST_REPLAY_RATE_PER_SECOND: '10' });
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '2',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function endpoint(receiver: Receiver): Promise<string> {
    receivers.push(receiver);
    return (await createEndpoint(t, receiver)).id;
  }
  /** Enqueues with the payload written exactly as `rawPayload`; returns the delivery id. */
  async function enqueueRaw(endpointId: string, rawPayload: string): Promise<string> {
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${endpointId}","event_type":"t","payload":${rawPayload}}`,
    );
    assert.equal(res.status, 202);
    return (await res.json()).deliveries[0].id;
  }
  const get = async (id: string) => (await t.send('GET', `/v1/deliveries/${id}`)).json();
  const statusOf = async (ids: string[]) =>
    (
      await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ANY(${ids}) ORDER BY id`
    ).map((r) => r.status);
  const allIn = (ids: string[], status: string) =>
    waitFor(`${ids.length} deliveries ${status}`, async () =>
      (await statusOf(ids)).every((s) => s === status),
    );
  /** Everything replay could touch, to compare before and after. */
  const snapshot = async () => ({
    deliveries: await db.sql`SELECT * FROM deliveries ORDER BY id`,
    queue: await db.sql`SELECT * FROM delivery_queue ORDER BY delivery_id`,
    attempts: (await db.sql`SELECT count(*)::int AS n FROM delivery_attempts`)[0]!.n,
    replayed: (await db.sql`SELECT count(*)::int AS n FROM replayed_deliveries`)[0]!.n,
  });
  const finished = (auditId: string) =>
    waitFor(`replay ${auditId} to finish`, async () => {
      const audit = await (await t.send('GET', `/v1/dead-letters/replays/${auditId}`)).json();
      return audit.state === 'finished' ? audit : undefined;
    });

  it('bulk: a dry run changes nothing; a real one requeues exactly the matches, paced, and they arrive intact', async () => {
    const a = await switchableReceiver();
    const b = await switchableReceiver();
    const epA = await endpoint(a.receiver);
    const epB = await endpoint(b.receiver);
    const raw = (n: number) => `{ "n": ${n},  "note": "caf\\u00e9",  "amount": 1.50 }`;
    const wanted = [];
    for (let n = 0; n < 5; n++) wanted.push(await enqueueRaw(epA, raw(n)));
    const bad = [await enqueueRaw(epA, '{"kind":"bad"}'), await enqueueRaw(epA, '{"kind": "bad"}')];
    const otherEndpoint = [];
    for (let n = 0; n < 3; n++) otherEndpoint.push(await enqueueRaw(epB, raw(n)));
    await allIn([...wanted, ...bad, ...otherEndpoint], 'dead_letter');

    const before = await snapshot();
    const dry = await t.send('POST', '/v1/dead-letters/replay', {
      endpoint_id: epA,
      status_code: 503,
      dry_run: true,
    });
    assert.equal(dry.status, 200);
    const dryBody = await dry.json();
    assert.deepEqual(
      { matched: dryBody.matched, replayed: dryBody.replayed, dry_run: dryBody.dry_run },
      { matched: 5, replayed: 0, dry_run: true },
    );
    assert.deepEqual(await snapshot(), before, 'a dry run changes no delivery, queue row or attempt');
    const [dryAudit] = await db.sql`SELECT * FROM replay_audit WHERE id = ${dryBody.audit_id}`;
    assert.equal(dryAudit!.dry_run, true);
    assert.equal(dryAudit!.matched, 5);
    assert.equal(dryAudit!.replayed, 0);

    a.state.down = false;
    b.state.down = false;
    const requestsBefore = a.receiver.requests.length;
    const res = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: epA, status_code: 503 });
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.equal(body.matched, 5);
    assert.ok(body.replayed >= 1 && body.replayed <= 5);
    const audit = await finished(body.audit_id);
    assert.equal(audit.actor, 'admin');
    assert.equal(audit.dry_run, false);
    assert.deepEqual([audit.kind, audit.matched, audit.replayed, audit.skipped], ['replay', 5, 5, 0]);
    assert.equal(audit.filter.endpoint_id, epA);
    assert.equal(audit.filter.status_code, 503);

    await allIn(wanted, 'delivered');
    assert.deepEqual(await statusOf(bad), ['dead_letter', 'dead_letter'], 'the 400s did not match');
    assert.deepEqual(await statusOf(otherEndpoint), ['dead_letter', 'dead_letter', 'dead_letter']);
    assert.equal(b.receiver.requests.length, 3 * 2, 'nothing more was sent to the other endpoint');
    const linked =
      await db.sql`SELECT delivery_id FROM replayed_deliveries WHERE audit_id = ${body.audit_id}`;
    assert.deepEqual(linked.map((r) => r.delivery_id).sort(), [...wanted].sort());

    const arrived = a.receiver.requests.slice(requestsBefore);
    assert.equal(arrived.length, 5, 'each replayed delivery sent once');
    for (const id of wanted) {
      const d = await get(id);
      const request = arrived.find((r) => r.headers['webhook-id'] === d.message_id);
      assert.ok(request, `delivery ${id} arrived with its original webhook-id`);
      const [message] = await db.sql<
        { payload: Buffer }[]
      >`SELECT payload FROM messages WHERE id = ${d.message_id}`;
      assert.ok(request.body.equals(message!.payload), 'payload bytes untouched');
      assert.equal(request.body.toString(), raw(wanted.indexOf(id)));
      // History kept; numbering restarts with the fresh budget; the replay says where.
      assert.deepEqual(
        d.attempts.map((x: { attempt: number; status_code: number }) => [x.attempt, x.status_code]),
        [
          [1, 503],
          [2, 503],
          [1, 200],
        ],
      );
      assert.equal(d.replays.length, 1);
      assert.equal(d.replays[0].audit_id, body.audit_id);
      assert.equal(d.replays[0].previous_status, 'dead_letter');
      assert.equal(d.replays[0].previous_attempt_count, 2);
      assert.equal(d.dead_at, null);
    }
    const times = arrived.map((r) => r.at);
    const spread = Math.max(...times) - Math.min(...times);
    assert.ok(spread >= 300, `5 replays at 10/s arrived within ${spread} ms; expected about 400 ms or more`);
  });

  it('bulk: honours limit (oldest first) and skips endpoints that are disabled', async () => {
    const e = await switchableReceiver();
    const ep = await endpoint(e.receiver);
    const ids = [];
    for (let n = 0; n < 4; n++) {
      ids.push(await enqueueRaw(ep, `{"n":${n}}`));
      await allIn([ids[n]!], 'dead_letter'); // one after the other: dead_at follows n
    }
    e.state.down = false;
    const res = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: ep, limit: 2 });
    const body = await res.json();
    assert.equal(body.matched, 2);
    await finished(body.audit_id);
    await allIn(ids.slice(0, 2), 'delivered');
    assert.deepEqual(await statusOf(ids.slice(2)), ['dead_letter', 'dead_letter']);

    await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: false });
    const skipped = await (await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: ep })).json();
    assert.equal(skipped.matched, 2);
    const audit = await finished(skipped.audit_id);
    assert.deepEqual([audit.replayed, audit.skipped], [0, 2]);
    assert.deepEqual(await statusOf(ids.slice(2)), ['dead_letter', 'dead_letter']);
    const queued = await db.sql`SELECT 1 FROM delivery_queue WHERE delivery_id = ANY(${ids})`;
    assert.equal(queued.length, 0);
  });

  it('bulk: rejects bad filters with 4xx and writes no audit row', async () => {
    const audits = async () => (await db.sql`SELECT count(*)::int AS n FROM replay_audit`)[0]!.n;
    const before = await audits();
    const cases: [unknown, number, RegExp][] = [
      [{}, 400, /at least one of endpoint_id/],
      [{ dry_run: true }, 400, /at least one/],
      [{ since: 'yesterday' }, 400, /^since: /],
      [{ since: '2026-05-01T10:00:00' }, 400, /^since: /],
      [{ since: '2026-05-02T00:00:00Z', until: '2026-05-01T00:00:00Z' }, 400, /^until: /],
      [{ endpoint_id: 'ep_x', limit: 0 }, 400, /^limit: /],
      [{ endpoint_id: 'ep_x', status_code: 'five hundred' }, 400, /^status_code: /],
      [{ endpoint_id: 'ep_x', extra: 1 }, 400, /extra|\(body\)/],
      [{ endpoint_id: 'ep_missing' }, 404, /ep_missing/],
    ];
    for (const [payload, status, message] of cases) {
      const res = await t.send('POST', '/v1/dead-letters/replay', payload);
      assert.equal(res.status, status, JSON.stringify(payload));
      assert.match((await res.json()).error.message, message, JSON.stringify(payload));
    }
    const text = await t.send('POST', '/v1/dead-letters/replay', 'x', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    assert.equal((await t.send('GET', '/v1/dead-letters/replays/rpl_missing')).status, 404);
    assert.equal(await audits(), before);
  });

  it('single: 404 unknown, 409 when pending or the endpoint is disabled, 202 requeues a dead one or resends a delivered one', async () => {
    const missing = await t.send('POST', '/v1/deliveries/dlv_missing/replay');
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'delivery_not_found');

    const s = await switchableReceiver();
    const ep = await endpoint(s.receiver);
    const dead = await enqueueRaw(ep, '{"single": true}');
    await allIn([dead], 'dead_letter');
    s.state.down = false;
    const delivered = await enqueueRaw(ep, '{"fine": true}');
    await allIn([delivered], 'delivered');
    // A delivered one is accepted too: a resend, same webhook-id, payload untouched.
    const resend = await t.send('POST', `/v1/deliveries/${delivered}/replay`);
    assert.equal(resend.status, 202);
    const resentMessage = (await get(delivered)).message_id;
    await waitFor('the resend to arrive', () =>
      s.receiver.requests.filter((r) => r.headers['webhook-id'] === resentMessage).length === 2
        ? true
        : undefined,
    );
    await allIn([delivered], 'delivered');
    const copies = s.receiver.requests.filter((r) => r.headers['webhook-id'] === resentMessage);
    assert.deepEqual(
      copies.map((r) => r.body.toString()),
      ['{"fine": true}', '{"fine": true}'],
    );

    await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: false });
    const parked = await enqueueRaw(ep, '{"waiting": true}');
    const pending = await t.send('POST', `/v1/deliveries/${parked}/replay`);
    assert.equal(pending.status, 409, 'pending (parked while the endpoint is disabled)');
    const disabled = await t.send('POST', `/v1/deliveries/${dead}/replay`);
    assert.equal(disabled.status, 409);
    assert.equal((await disabled.json()).error.code, 'endpoint_unavailable');
    assert.equal((await get(dead)).status, 'dead_letter', 'a refused replay changes nothing');
    await t.send('PATCH', `/v1/endpoints/${ep}`, { enabled: true });

    const res = await t.send('POST', `/v1/deliveries/${dead}/replay`);
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.equal(body.id, dead);
    assert.ok(['pending', 'in_flight', 'delivered'].includes(body.status), body.status); // a dispatcher may be quick
    assert.match(body.audit_id, /^rpl_/);
    await allIn([dead], 'delivered');
    const d = await get(dead);
    const sent = s.receiver.requests.filter((r) => r.headers['webhook-id'] === d.message_id);
    assert.equal(sent.length, 3, 'two failed attempts and the replay, one webhook-id');
    assert.equal(sent.at(-1)!.body.toString(), '{"single": true}');
    assert.equal(
      (await t.send('POST', `/v1/deliveries/${dead}/replay`)).status,
      202,
      'delivered now: a resend',
    );
    await waitFor('the resend of the replayed one', () =>
      s.receiver.requests.filter((r) => r.headers['webhook-id'] === d.message_id).length === 4
        ? true
        : undefined,
    );
    const [audit] = await db.sql`SELECT * FROM replay_audit WHERE id = ${body.audit_id}`;
    assert.deepEqual(audit!.filter, { delivery_id: dead });
    assert.deepEqual(
      [audit!.actor, audit!.matched, audit!.replayed, audit!.state],
      ['admin', 1, 1, 'finished'],
    );
  });

  it('single: a failed delivery waiting for its retry is sent now, with a fresh budget', async () => {
    let up = false;
    // Retry-After: 3600 puts the retry an hour away (within HOOKPOST_RETRY_AFTER_MAX_SECONDS).
    const receiver = await startReceiver((_req, res) =>
      up ? res.writeHead(200).end() : res.writeHead(503, { 'retry-after': '3600' }).end(),
    );
    const ep = await endpoint(receiver);
    const id = await enqueueRaw(ep, '{"later": true}');
    const waiting = await waitFor('the retry to be scheduled', async () => {
      const d = await get(id);
      return d.status === 'failed' && d.next_attempt_at ? d : undefined;
    });
    assert.ok(Date.parse(waiting.next_attempt_at) - Date.now() > 3_000_000);
    up = true;
    const res = await t.send('POST', `/v1/deliveries/${id}/replay`);
    assert.equal(res.status, 202);
    await allIn([id], 'delivered');
    const d = await get(id);
    assert.deepEqual(
      d.attempts.map((a: { attempt: number; status_code: number }) => [a.attempt, a.status_code]),
      [
        [1, 503],
        [1, 200],
      ],
    );
    assert.equal(d.replays[0].previous_status, 'failed');
    assert.equal(d.replays[0].previous_attempt_count, 1);
  });
});
