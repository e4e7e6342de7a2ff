/**
 * Resend (POST /v1/endpoints/{id}/resend) against a real receiver and a real dispatcher: the
 * deliveries of a time range are sent again whatever their state, each exactly once, with their
 * original webhook-ids and bytes, paced, audited with the caller's reason; queued ones and ones
 * whose payload was erased are skipped and counted; a dry run changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resendSchema } from '../../src/api/openapi/messages-responses.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('resend', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  let receiver: Receiver;
  let endpoint: string;
  let partner: Awaited<ReturnType<typeof keySender>>;
  /** message id by delivery id, and the payload text as sent. */
  const sent = new Map<string, { message: string; raw: string }>();
  let before_: string[] = [];
  let range: string[] = [];
  let after_: string[] = [];
  let since = '';
  let until = '';
  let waiting = '';
  let erased = '';
  let dead = '';

  const dbNow = async () =>
    (await db.sql<{ t: string }[]>`SELECT to_json(clock_timestamp()) #>> '{}' AS t`)[0]!.t;
  const enqueue = async (raw: string) => {
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${endpoint}","event_type":"order.created","payload":${raw}}`,
    );
    assert.equal(res.status, 202);
    const body = await res.json();
    sent.set(body.deliveries[0].id, { message: body.message_id, raw });
    return body.deliveries[0].id as string;
  };
  const statusOf = async (ids: string[]) =>
    (
      await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ANY(${ids}) ORDER BY id`
    ).map((r) => r.status);
  const received = (message: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === message);

  before(async () => {
    db = await createTestDatabase();
    // Batches of 2 released at 10/s: pacing shows in the arrival times.
    t = await createTestApp(db, { HOOKPOST_REPLAY_BATCH_SIZE: '2', HOOKPOST_REPLAY_RATE_PER_SECOND: '10' });
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '3',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
    // 400 to "bad" (a dead letter at once), 503 + Retry-After 1 h to "later" (waits in the queue), else 200.
    receiver = await startReceiver((_req, res, body) => {
      const text = body.toString();
      if (text.includes('"bad"')) res.writeHead(400).end();
      else if (text.includes('"later"')) res.writeHead(503, { 'retry-after': '3600' }).end();
      else res.writeHead(200).end();
    });
    endpoint = (await createEndpoint(t, receiver, { tenant_id: 'partner' })).id;
    before_ = [await enqueue('{"n": "before-1"}'), await enqueue('{"n": "before-2"}')];
    since = await dbNow();
    range = [
      await enqueue('{"n":1,  "spaced": 1.0}'),
      await enqueue('{"n": 2}'),
      await enqueue('{"n": 3, "kind": "bad"}'),
      await enqueue('{"n": 4}'),
      await enqueue('{"n": 5, "kind": "later"}'),
      await enqueue('{"n": 6, "erase": true}'),
    ];
    dead = range[2]!;
    waiting = range[4]!;
    erased = range[5]!;
    until = await dbNow();
    after_ = [await enqueue('{"n": "after-1"}')];
    await waitFor('first deliveries settled', async () => {
      const s = await statusOf([...before_, ...range, ...after_]);
      return (
        s.filter((x) => x === 'delivered').length === 7 && s.includes('dead_letter') && s.includes('failed')
      );
    });
    // An erasure request for one delivered message of the range.
    assert.equal((await t.send('POST', `/v1/messages/${sent.get(erased)!.message}/expunge`)).status, 200);
    partner = await keySender(t, { scopes: ['replay', 'deliveries:read'], tenant_id: 'partner' });
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  const snapshot = async () => ({
    deliveries:
      await db.sql`SELECT id, status, attempt_count, dead_at, updated_at FROM deliveries ORDER BY id`,
    queue:
      await db.sql`SELECT delivery_id, next_attempt_at, attempt_count FROM delivery_queue ORDER BY delivery_id`,
    requests: receiver.requests.length,
  });

  it('a dry run counts the range and changes nothing', async () => {
    const beforeRun = await snapshot();
    const res = await partner.send('POST', `/v1/endpoints/${endpoint}/resend`, {
      since,
      until,
      dry_run: true,
      reason: 'checking',
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(
      [
        body.dry_run,
        body.state,
        body.matched,
        body.resent,
        body.skipped_queued,
        body.skipped_payload_expired,
      ],
      [true, 'finished', 6, 0, 1, 1],
    );
    // Finished when it answers, so nothing runs after it: no wait needed to see that it changed nothing.
    assert.deepEqual(await snapshot(), beforeRun);
    const [audit] =
      await db.sql`SELECT dry_run, state, replayed FROM replay_audit WHERE id = ${body.audit_id}`;
    assert.deepEqual({ ...audit }, { dry_run: true, state: 'finished', replayed: 0 });
  });

  it('re-sends exactly the range once, same webhook-ids and bytes, paced, audited with the reason', async () => {
    const waitingBefore = (
      await db.sql`SELECT next_attempt_at FROM delivery_queue WHERE delivery_id = ${waiting}`
    )[0]!;
    const countBefore = new Map([...sent].map(([id, s]) => [id, received(s.message).length]));
    const requestedAt = Date.now();
    const res = await partner.send('POST', `/v1/endpoints/${endpoint}/resend`, {
      since,
      until,
      reason: 'partner restored a backup from yesterday',
    });
    assert.equal(res.status, 202, await res.clone().text());
    const body = await res.json();
    assert.equal(body.matched, 6);
    assert.match(body.audit_id, /^rpl_/);
    assert.ok(resendSchema.safeParse(body).success, 'the documented shape');
    const expected = range.filter((id) => id !== waiting && id !== erased);
    await waitFor('the resent deliveries', () =>
      expected.every((id) => received(sent.get(id)!.message).length === countBefore.get(id)! + 1)
        ? true
        : undefined,
    );
    await waitFor('the resend to finish', async () => {
      const [row] = await db.sql`SELECT state FROM replay_audit WHERE id = ${body.audit_id}`;
      return row!.state === 'finished' ? true : undefined;
    });
    await waitFor('the resent ones settled', async () =>
      (await statusOf(expected.filter((id) => id !== dead))).every((s) => s === 'delivered'),
    );
    // Once nothing of the endpoint is queued but the delivery waiting an hour for its retry (and
    // nothing in flight), no further request can come: count each once, nothing outside the
    // range, nothing skipped.
    await waitFor('nothing else queued or in flight', async () => {
      const rows = await db.sql<{ id: string; leased: boolean }[]>`
        SELECT delivery_id AS id, lease_expires_at IS NOT NULL AS leased FROM delivery_queue
        WHERE endpoint_id = ${endpoint}`;
      return rows.length === 1 && rows[0]!.id === waiting && !rows[0]!.leased;
    });
    for (const [id, s] of sent) {
      const extra = received(s.message).length - countBefore.get(id)!;
      assert.equal(extra, expected.includes(id) ? 1 : 0, `${id} (${s.raw}) sent ${extra} more times`);
    }
    // Same webhook-id and the same bytes as the first time.
    for (const id of expected) {
      const copies = received(sent.get(id)!.message);
      assert.equal(copies.at(-1)!.body.toString(), sent.get(id)!.raw);
      assert.equal(copies.at(-1)!.headers['webhook-id'], copies[0]!.headers['webhook-id']);
    }
    // Paced: 4 at 10/s are released 100 ms apart, so the last cannot leave before 300 ms after the
    // request. (A bound on the spread of arrivals would depend on how late the first one was
    // claimed, which on a loaded machine varies by 100 ms and more.)
    const times = expected.map((id) => received(sent.get(id)!.message).at(-1)!.at);
    const lastAfter = Math.max(...times) - requestedAt;
    assert.ok(lastAfter >= 290, `the last of 4 resends at 10/s arrived ${lastAfter} ms after the request`);
    // The delivery waiting for its retry was left alone: still queued for the same time.
    const waitingAfter = (
      await db.sql`SELECT next_attempt_at FROM delivery_queue WHERE delivery_id = ${waiting}`
    )[0]!;
    assert.deepEqual(waitingAfter, waitingBefore);
    // Audited: who, why, how many.
    const [audit] = await db.sql`SELECT * FROM replay_audit WHERE id = ${body.audit_id}`;
    assert.deepEqual(
      [audit!.state, audit!.matched, audit!.replayed, audit!.skipped, audit!.tenant_id, audit!.dry_run],
      ['finished', 6, 4, 1 + 1, 'partner', false],
    );
    assert.equal(audit!.filter.reason, 'partner restored a backup from yesterday');
    assert.equal(audit!.filter.kind, 'resend');
    const log = await (await t.send('GET', '/v1/audit-log?limit=50')).json();
    const entry = log.data.find((e: { resource_id: string }) => e.resource_id === body.audit_id);
    assert.equal(entry.action, 'replay.started');
    assert.equal(entry.actor_key_id, partner.id);
    assert.equal(entry.details.reason, 'partner restored a backup from yesterday');
    // A resend is called a resend: its progress counts `resent`, in the audit log and on its own.
    assert.deepEqual(entry.replay, { kind: 'resend', state: 'finished', matched: 6, resent: 4, skipped: 2 });
    const progress = await (await partner.send('GET', `/v1/dead-letters/replays/${body.audit_id}`)).json();
    assert.deepEqual([progress.kind, progress.resent, progress.replayed], ['resend', 4, undefined]);
    // Each resent delivery shows the round in its replays.
    const shown = await (await partner.send('GET', `/v1/deliveries/${expected[0]}`)).json();
    assert.equal(shown.replays.at(-1).audit_id, body.audit_id);
    assert.equal(shown.replays.at(-1).previous_status, 'delivered');
  });

  it('filters by event type and status; refuses bad input, a disabled endpoint and another tenant', async () => {
    const dry = (extra: Record<string, unknown>) =>
      partner.send('POST', `/v1/endpoints/${endpoint}/resend`, { since, until, dry_run: true, ...extra });
    assert.equal((await (await dry({ event_types: ['invoice.*'] })).json()).matched, 0);
    assert.equal((await (await dry({ event_types: ['order.*'] })).json()).matched, 6);
    assert.equal((await (await dry({ statuses: ['dead_letter'] })).json()).matched, 1);
    assert.equal((await (await dry({ limit: 2 })).json()).matched, 2);
    for (const bad of [
      { since: undefined },
      { until: '2000-01-01T00:00:00Z' },
      { extra: 1 },
      { statuses: ['lost'] },
    ]) {
      const res = await dry(bad);
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal((await res.json()).error.code, 'validation_failed');
    }
    const other = (await createEndpoint(t, 'http://127.0.0.1:9/other', { tenant_id: 'other' })).id;
    const foreign = await partner.send('POST', `/v1/endpoints/${other}/resend`, { since });
    assert.equal(foreign.status, 404);
    assert.equal((await foreign.json()).error.code, 'endpoint_not_found');
    await t.send('PATCH', `/v1/endpoints/${endpoint}`, { enabled: false });
    const disabled = await partner.send('POST', `/v1/endpoints/${endpoint}/resend`, { since });
    assert.equal(disabled.status, 409);
    assert.equal((await disabled.json()).error.code, 'endpoint_unavailable');
    await t.send('PATCH', `/v1/endpoints/${endpoint}`, { enabled: true });
  });
});
