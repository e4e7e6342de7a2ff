/**
 * Operational events: hookpost's own events reach the endpoints of the reserved tenant
 * `hookpost` as ordinary signed deliveries, committed with the change that causes them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { disableEndpoints } from '../../src/endpoints/lifecycle.js';
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

interface OpsEvent {
  type: string;
  timestamp: string;
  data: { tenant_id: string | null; endpoint_id: string | null; [key: string]: unknown };
}

const CAP = 5;

describe('operational events', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let second: Awaited<ReturnType<typeof startTestDispatcher>>;
  let ops: Receiver;
  let opsSecret: string;
  let failingOps: { id: string };
  const receivers: Receiver[] = [];

  /** The events the operator endpoint received so far, each checked against its signature. */
  const events = (): OpsEvent[] =>
    ops.requests.map((r) => {
      new Webhook(opsSecret).verify(r.body.toString(), r.headers as Record<string, string>);
      return JSON.parse(r.body.toString()) as OpsEvent;
    });
  const eventsFor = (endpointId: string, type?: string) =>
    events().filter((e) => e.data.endpoint_id === endpointId && (type === undefined || e.type === type));

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    ops = await startReceiver();
    // The operator endpoints: created with the admin key in the reserved tenant, subscribed to
    // everything. The second one refuses every event, so its own deliveries dead-letter: that
    // must never produce events about it (no loops).
    const created = await createEndpoint(t, ops, { tenant_id: 'hookpost' });
    assert.equal(created.tenant_id, 'hookpost');
    opsSecret = created.secret;
    const refusing = await startReceiver((_req, res) => res.writeHead(400).end());
    receivers.push(refusing);
    failingOps = await createEndpoint(t, refusing, { tenant_id: 'hookpost' });
    // Two dispatchers, as two processes would run: the cap is counted in the database.
    const env = {
      HOOKPOST_BREAKER_THRESHOLD: '3',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '0.3',
      HOOKPOST_OPS_EVENTS_PER_MINUTE: String(CAP),
    };
    dispatcher = await startTestDispatcher(db, env);
    second = await startTestDispatcher(db, env);
  });
  after(async () => {
    await dispatcher.stop();
    await second.stop();
    await ops.close();
    for (const r of receivers) await r.close();
    await db.drop();
  });

  it('a 410 disables the endpoint and a signed endpoint.disabled reaches the operators', async () => {
    const gone = await startReceiver((_req, res) => res.writeHead(410).end());
    receivers.push(gone);
    const ep = await createEndpoint(t, gone, { tenant_id: 'acme' });
    await enqueueMany(t.send, ep.id, 1);
    const event = await waitFor('endpoint.disabled', () => eventsFor(ep.id, 'endpoint.disabled')[0]);
    assert.deepEqual(event!.data, {
      tenant_id: 'acme',
      endpoint_id: ep.id,
      reason: 'endpoint answered 410 Gone',
    });
    assert.ok(Math.abs(Date.parse(event!.timestamp) - Date.now()) < 60_000);
    const shown = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.equal(shown.enabled, false);
    // An ordinary message of the `hookpost` tenant, listed like any other.
    const [row] = await db.sql`
      SELECT m.tenant_id, m.producer, count(*)::int AS n FROM messages m
      WHERE m.event_type = 'endpoint.disabled' AND convert_from(m.payload, 'UTF8')::jsonb #>> '{data,endpoint_id}' = ${ep.id}
      GROUP BY 1, 2`;
    assert.deepEqual({ ...row }, { tenant_id: 'hookpost', producer: 'hookpost', n: 1 });
  });

  it('a breaker that opens and then closes sends both events', async () => {
    let calls = 0;
    // Fails until the circuit has opened (3 failures), then answers 200: the probe closes it.
    const flaky = await startReceiver((_req, res) => res.writeHead(++calls <= 3 ? 503 : 200).end());
    receivers.push(flaky);
    const ep = await createEndpoint(t, flaky, { tenant_id: 'acme' });
    await enqueueMany(t.send, ep.id, 1);
    await waitFor(
      'circuit_opened and circuit_closed',
      () => eventsFor(ep.id, 'endpoint.circuit_closed').length > 0,
    );
    const types = eventsFor(ep.id).map((e) => e.type);
    assert.deepEqual(types, ['endpoint.circuit_opened', 'endpoint.circuit_closed']);
    assert.equal(eventsFor(ep.id)[0]!.data.tenant_id, 'acme');
  });

  it('1,000 dead letters in a minute send at most the cap plus one summary per endpoint-minute', async () => {
    const refusing = await startReceiver((_req, res) => res.writeHead(400).end());
    receivers.push(refusing);
    const ep = await createEndpoint(t, refusing, { tenant_id: 'acme' });
    await enqueueMany(t.send, ep.id, 1000);
    await waitFor(
      'all 1,000 dead-lettered',
      async () => {
        const [row] = await db.sql`
          SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${ep.id} AND status = 'dead_letter'`;
        return row!.n === 1000;
      },
      120_000,
    );
    // The summaries come once their minute is over.
    await waitFor(
      'the summaries account for every dead letter',
      () => {
        const single = eventsFor(ep.id, 'delivery.dead_lettered').length;
        const folded = eventsFor(ep.id, 'delivery.dead_lettered.summary').reduce(
          (sum, e) => sum + Number(e.data.not_sent),
          0,
        );
        return single + folded === 1000;
      },
      150_000,
    );
    const minute = (e: OpsEvent) => e.timestamp.slice(0, 16);
    const byMinute = new Map<string, { single: number; summaries: OpsEvent[] }>();
    for (const e of eventsFor(ep.id)) {
      const key =
        e.type === 'delivery.dead_lettered.summary' ? String(e.data.minute).slice(0, 16) : minute(e);
      const entry = byMinute.get(key) ?? { single: 0, summaries: [] };
      if (e.type === 'delivery.dead_lettered') entry.single++;
      else entry.summaries.push(e);
      byMinute.set(key, entry);
    }
    for (const [key, { single, summaries }] of byMinute) {
      assert.ok(single <= CAP, `${single} single events in ${key}`);
      assert.ok(summaries.length <= 1, `one summary at most in ${key}`);
      if (summaries.length === 1) {
        assert.equal(single, CAP, `the cap was used up before folding in ${key}`);
        assert.equal(summaries[0]!.data.dead_lettered, Number(summaries[0]!.data.not_sent) + CAP);
      }
    }
    const one = eventsFor(ep.id, 'delivery.dead_lettered')[0]!;
    assert.equal(one.data.tenant_id, 'acme');
    assert.equal(one.data.event_type, 'x');
    assert.equal(one.data.last_status_code, 400);
    assert.match(String(one.data.delivery_id), /^dlv_/);
  });

  it('a finished bulk replay sends replay.finished', async () => {
    let calls = 0;
    // The first attempt is refused (a dead letter), the replayed one is taken.
    const once = await startReceiver((_req, res) => res.writeHead(++calls === 1 ? 400 : 200).end());
    receivers.push(once);
    const ep = await createEndpoint(t, once, { tenant_id: 'acme' });
    await enqueueMany(t.send, ep.id, 1);
    await waitFor('the dead letter', () => eventsFor(ep.id, 'delivery.dead_lettered').length === 1);
    const res = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: ep.id });
    assert.equal(res.status, 202);
    const { audit_id: auditId } = await res.json();
    const event = (await waitFor('replay.finished', () => eventsFor(ep.id, 'replay.finished')[0]))!;
    assert.equal(event.data.replay_id, auditId);
    assert.equal(event.data.tenant_id, 'acme');
    assert.deepEqual([event.data.matched, event.data.replayed, event.data.skipped], [1, 1, 0]);
  });

  it("emits nothing about the hookpost tenant's own deliveries", async () => {
    const [row] = await db.sql`
      SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${failingOps.id} AND status = 'dead_letter'`;
    assert.ok(row!.n > 0, 'the refusing operator endpoint dead-lettered events');
    assert.equal(eventsFor(failingOps.id).length, 0);
  });

  it('a rolled-back change emits nothing; a committed one emits exactly its event', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/hook', { tenant_id: 'acme' });
    const count = async () =>
      (
        await db.sql`
          SELECT count(*)::int AS n FROM messages
          WHERE tenant_id = 'hookpost' AND convert_from(payload, 'UTF8')::jsonb #>> '{data,endpoint_id}' = ${ep.id}`
      )[0]!.n as number;
    await assert.rejects(
      db.sql.begin(async (tx) => {
        assert.deepEqual(
          await disableEndpoints(tx, tx`SELECT ${ep.id}::text AS id, 'test'::text AS reason`),
          [ep.id],
        );
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(await count(), 0);
    assert.equal((await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json()).enabled, true);
    assert.equal((await t.send('PATCH', `/v1/endpoints/${ep.id}`, { enabled: false })).status, 200);
    assert.equal(await count(), 1);
    await waitFor('endpoint.disabled by API', () => eventsFor(ep.id, 'endpoint.disabled').length === 1);
  });
});
