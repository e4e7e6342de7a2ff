/**
 * A tenant-bound caller never reads the names the operator gives its keys: in the replay records
 * of its own deliveries (GET /v1/deliveries/{id} `replays`, GET /v1/dead-letters/replays/{id})
 * anything not done by one of its own tenant's keys shows as "operator" with no key id, while its
 * own keys' replays show their names. The operator sees every name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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

describe("the operator's key names in a tenant's replay records", () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    receiver = await startReceiver((_req, res) => res.writeHead(500).end());
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  const deadLetter = async (endpointId: string) => {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: {},
    });
    const id = (await res.json()).deliveries[0].id as string;
    await waitFor('the delivery dead-lettered', async () => {
      const [row] = await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ${id}`;
      return row!.status === 'dead_letter';
    });
    return id;
  };

  it("shows 'operator' for the operator's replays and the tenant's own key by name", async () => {
    const endpoint = await createEndpoint(t, receiver, { tenant_id: 'acme', max_attempts: 1 });
    const ops = await keySender(t, { scopes: ['replay', 'deliveries:read'], name: 'ops-oncall-bob' });
    const own = await keySender(t, {
      scopes: ['replay', 'deliveries:read'],
      tenant_id: 'acme',
      name: 'acme-integration',
    });

    const byOperator = await deadLetter(endpoint.id);
    const replayed = await ops.send('POST', `/v1/deliveries/${byOperator}/replay`);
    assert.equal(replayed.status, 202);
    const operatorAudit = (await replayed.json()).audit_id as string;
    await waitFor('the replayed delivery dead-lettered again', async () => {
      const [row] = await db.sql<{ status: string; n: number }[]>`
        SELECT d.status, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS n
        FROM deliveries d WHERE d.id = ${byOperator}`;
      return row!.status === 'dead_letter' && row!.n === 2;
    });
    const byTenant = await deadLetter(endpoint.id);
    const tenantReplay = await own.send('POST', `/v1/deliveries/${byTenant}/replay`);
    assert.equal(tenantReplay.status, 202);
    const tenantAudit = (await tenantReplay.json()).audit_id as string;

    // The tenant's own key reads its deliveries.
    const seen = await (await own.send('GET', `/v1/deliveries/${byOperator}`)).json();
    assert.deepEqual(
      seen.replays.map((r: { actor: string }) => r.actor),
      ['operator'],
    );
    const progress = await (await own.send('GET', `/v1/dead-letters/replays/${operatorAudit}`)).json();
    assert.equal(progress.actor, 'operator');
    assert.equal(progress.actor_key_id, null);
    const itsOwn = await (await own.send('GET', `/v1/dead-letters/replays/${tenantAudit}`)).json();
    assert.equal(itsOwn.actor, 'acme-integration');
    assert.equal(itsOwn.actor_key_id, own.id);
    assert.deepEqual(
      (await (await own.send('GET', `/v1/deliveries/${byTenant}`)).json()).replays.map(
        (r: { actor: string }) => r.actor,
      ),
      ['acme-integration'],
    );
    const body = JSON.stringify([seen, progress]);
    assert.ok(!body.includes('ops-oncall-bob') && !body.includes(ops.id), 'the name and id appear nowhere');

    // The operator sees who it was.
    const asOperator = await (await t.send('GET', `/v1/dead-letters/replays/${operatorAudit}`)).json();
    assert.equal(asOperator.actor, 'ops-oncall-bob');
    assert.equal(asOperator.actor_key_id, ops.id);
    const detail = await (await t.send('GET', `/v1/deliveries/${byOperator}`)).json();
    assert.deepEqual(
      detail.replays.map((r: { actor: string }) => r.actor),
      ['ops-oncall-bob'],
    );
  });
});
