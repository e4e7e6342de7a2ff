/**
 * Closing an endpoint's circuit by hand (POST /v1/endpoints/{id}/close-circuit, "Retry now"), and
 * the reads that say why a delivery waits: a real dispatcher opens the circuit of a failing
 * receiver, the deliveries and the health say so and until when, the receiver heals, the close
 * (scoped, audited) sends what waited to it at once. Also: the delivery at the head of an
 * ordering key, and a bulk replay that runs into an open circuit saying so.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Dispatcher } from '../../src/dispatch/dispatcher.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  keySender,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('closing a circuit by hand', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  let receiver: Receiver;
  let healthy = false;
  let ep: string;

  const health = async (id: string) => (await t.send('GET', `/v1/endpoints/${id}/health`)).json();
  const deliveriesOf = async (id: string) =>
    (await (await t.send('GET', `/v1/deliveries?endpoint_id=${id}&limit=100`)).json()).data as {
      id: string;
      status: string;
      parked: string | null;
    }[];
  const circuitAudits = async () =>
    (await (await t.send('GET', '/v1/audit-log?limit=100')).json()).data.filter(
      (a: { action: string }) => a.action === 'endpoint.circuit_closed',
    );

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    receiver = await startReceiver((_req, res) => res.writeHead(healthy ? 200 : 503).end());
    ep = (await createEndpoint(t, receiver)).id;
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '50',
      HOOKPOST_BREAKER_THRESHOLD: '3',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '3600',
      HOOKPOST_BREAKER_MAX_COOLDOWN_SECONDS: '3600',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
  });
  after(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('shows the open circuit, its next probe and what waits behind it', async () => {
    await enqueueMany(t.send, ep, 5);
    // The circuit opens after 3 failures; every delivery ends up parked behind it.
    const opened = await waitFor('the circuit open with 5 deliveries parked', async () => {
      const h = await health(ep);
      return h.state === 'open' && h.parked_count === 5 ? h : null;
    });
    const expectedProbe = Date.parse(opened.opened_at) + opened.cooldown_seconds * 1000;
    assert.equal(Date.parse(opened.next_probe_at), expectedProbe);
    const rows = await deliveriesOf(ep);
    assert.equal(rows.length, 5);
    for (const d of rows) assert.equal(d.parked, 'circuit_open', JSON.stringify(d));
    const one = await (await t.send('GET', `/v1/deliveries/${rows[0]!.id}`)).json();
    assert.equal(Date.parse(one.next_probe_at), expectedProbe);
    assert.equal(one.ordering_head_id, null);
  });

  it('needs endpoints:write and stays inside the key’s tenant', async () => {
    const reader = await keySender(t, { scopes: ['endpoints:read'] });
    const refused = await reader.send('POST', `/v1/endpoints/${ep}/close-circuit`);
    assert.equal(refused.status, 403);
    assert.match((await refused.json()).error.message, /endpoints:write/);
    const other = await keySender(t, { scopes: ['endpoints:write'], tenant_id: 'someone_else' });
    assert.equal((await other.send('POST', `/v1/endpoints/${ep}/close-circuit`)).status, 404);
    assert.equal((await t.send('POST', '/v1/endpoints/ep_nope/close-circuit')).status, 404);
    assert.equal((await health(ep)).state, 'open');
    assert.deepEqual(await circuitAudits(), []);
  });

  it('closes it, sends what waited to the healed receiver at once, and writes the audit log', async () => {
    healthy = true;
    const before = receiver.requests.length;
    const writer = await keySender(t, { scopes: ['endpoints:write'], name: 'on-call' });
    const res = await writer.send('POST', `/v1/endpoints/${ep}/close-circuit`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      endpoint_id: ep,
      state: 'closed',
      previous_state: 'open',
      released: 5,
    });
    // Not an hour later at the probe: now.
    await waitFor('5 deliveries delivered', async () =>
      (await deliveriesOf(ep)).every((d) => d.status === 'delivered'),
    );
    assert.ok(receiver.requests.length - before >= 5);
    const h = await health(ep);
    assert.deepEqual(
      [h.state, h.consecutive_failures, h.next_probe_at, h.parked_count],
      ['closed', 0, null, 0],
    );

    const [entry, ...more] = await circuitAudits();
    assert.deepEqual(more, []);
    assert.equal(entry.resource_type, 'endpoint');
    assert.equal(entry.resource_id, ep);
    assert.equal(entry.actor_name, 'on-call');
    assert.deepEqual(entry.details, { previous_state: 'open', released: 5 });
  });

  it('a circuit already closed is left as it is, and not audited again', async () => {
    const res = await t.send('POST', `/v1/endpoints/${ep}/close-circuit`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual([body.previous_state, body.released], ['closed', 0]);
    assert.equal((await circuitAudits()).length, 1);
  });

  it('refuses a disabled endpoint: enabling it is what sends its deliveries', async () => {
    const off = (await createEndpoint(t, receiver)).id;
    await t.send('PATCH', `/v1/endpoints/${off}`, { enabled: false });
    const res = await t.send('POST', `/v1/endpoints/${off}/close-circuit`);
    assert.equal(res.status, 409);
    const error = (await res.json()).error;
    assert.equal(error.code, 'endpoint_disabled');
    assert.match(error.message, /enable it/);
  });

  it('names the delivery at the head of an ordering key to the ones behind it', async () => {
    const off = (await createEndpoint(t, receiver)).id;
    await t.send('PATCH', `/v1/endpoints/${off}`, { enabled: false });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await t.send('POST', '/v1/deliveries', {
        endpoint_id: off,
        event_type: 'x',
        payload: { i },
        ordering_key: 'order-1',
      });
      ids.push((await res.json()).deliveries[0].id);
    }
    const [head, behind] = await Promise.all(
      ids.map(async (id) => (await t.send('GET', `/v1/deliveries/${id}`)).json()),
    );
    assert.deepEqual([head.parked, head.ordering_head_id], ['endpoint_disabled', null]);
    assert.deepEqual([behind.parked, behind.ordering_head_id], ['behind_ordering_key', ids[0]]);
  });

  it('a bulk replay into an open circuit names it, dry run and real', async () => {
    healthy = false;
    const down = (await createEndpoint(t, receiver)).id;
    await enqueueMany(t.send, down, 2);
    await waitFor('2 deliveries parked behind an open circuit', async () => {
      const h = await health(down);
      return h.state === 'open' && h.parked_count === 2;
    });
    // They give up while it is open (as if their attempts ran out).
    await db.sql`
      WITH dead AS (DELETE FROM delivery_queue WHERE endpoint_id = ${down} RETURNING delivery_id)
      UPDATE deliveries SET status = 'dead_letter', dead_at = now() WHERE id IN (SELECT delivery_id FROM dead)`;
    const probe = (await health(down)).next_probe_at;
    const dry = await (
      await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: down, dry_run: true })
    ).json();
    assert.deepEqual(dry.open_circuits, [{ endpoint_id: down, state: 'open', next_probe_at: probe }]);
    // Another endpoint's replay does not name it.
    const elsewhere = await (
      await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: ep, dry_run: true })
    ).json();
    assert.deepEqual(elsewhere.open_circuits, []);

    const real = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: down });
    assert.equal(real.status, 202);
    assert.deepEqual((await real.json()).open_circuits, [
      { endpoint_id: down, state: 'open', next_probe_at: probe },
    ]);
    await waitFor('the replayed deliveries parked behind the circuit', async () => {
      const rows = await deliveriesOf(down);
      return rows.length === 2 && rows.every((d) => d.parked === 'circuit_open');
    });
  });
});
