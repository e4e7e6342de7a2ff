/**
 * Tenants end to end: fan-out never leaves the tenant (real dispatcher, real receivers), prefix
 * subscriptions through the subscription index, idempotency per tenant, tenant CRUD and delete,
 * portal sessions, the audit log.
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

describe('tenants', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(async () => {
    for (const r of receivers) await r.close();
    await db.drop();
  });

  it("a fan-out for A reaches only A's endpoints when B has identical subscriptions", async () => {
    const dispatcher = await startTestDispatcher(db);
    try {
      const at = async (tenant: string, types: string[]) => {
        const r = await startReceiver();
        receivers.push(r);
        await createEndpoint(t, r, { tenant_id: tenant, event_types: types });
        return r;
      };
      const a = [await at('fan_a', ['order.created']), await at('fan_a', ['order.*']), await at('fan_a', [])];
      const b = [await at('fan_b', ['order.created']), await at('fan_b', ['order.*']), await at('fan_b', [])];
      const res = await t.send('POST', '/v1/deliveries', {
        tenant_id: 'fan_a',
        event_type: 'order.created',
        payload: { for: 'a' },
      });
      assert.equal(res.status, 202);
      assert.equal((await res.json()).deliveries.length, 3);
      await waitFor('A to receive', () => a.every((r) => r.requests.length === 1));
      // Also a tenant-bound producer key that names no tenant: its fan-out stays in its tenant.
      const producer = await keySender(t, { scopes: ['deliveries:write'], tenant_id: 'fan_a' });
      assert.equal(
        (
          await producer.send('POST', '/v1/deliveries', {
            event_type: 'order.created',
            payload: { for: 'a2' },
          })
        ).status,
        202,
      );
      await waitFor('A to receive again', () => a.every((r) => r.requests.length === 2));
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        b.map((r) => r.requests.length),
        [0, 0, 0],
        'B received nothing',
      );
      const [count] = await db.sql`
        SELECT count(*)::int AS n FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
        WHERE e.tenant_id = 'fan_b'`;
      assert.equal(count!.n, 0);
    } finally {
      await dispatcher.stop();
    }
  });

  it('prefix subscriptions: order.* matches order.created and order.item.added, not orders.x or order', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/prefix', {
      tenant_id: 'prefix',
      event_types: ['order.*'],
    });
    const deep = await createEndpoint(t, 'http://127.0.0.1:9/deep', {
      tenant_id: 'prefix',
      event_types: ['a.b.*'],
    });
    const targets = async (type: string) =>
      (
        await (
          await t.send('POST', '/v1/deliveries', { tenant_id: 'prefix', event_type: type, payload: {} })
        ).json()
      ).deliveries.map((d: { endpoint_id: string }) => d.endpoint_id);
    assert.deepEqual(await targets('order.created'), [ep.id]);
    assert.deepEqual(await targets('order.item.added'), [ep.id]);
    assert.deepEqual(await targets('orders.x'), []);
    assert.deepEqual(await targets('order'), []);
    assert.deepEqual(await targets('a.b.c'), [deep.id]);
    assert.deepEqual(await targets('a.bc'), []);
    for (const bad of ['*', 'order*', 'or*der.x', 'order.*.x', '.*']) {
      const res = await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x', event_types: [bad] });
      assert.equal(res.status, 400, bad);
    }
  });

  it('the fan-out lookup is index-driven (the subscription GIN index), not a scan of every endpoint', async () => {
    // 5000 endpoints in 500 tenants, all subscribed to the same type: a tenant's fan-out must
    // find its 10 through the index, never filter all 5000.
    await db.sql`INSERT INTO tenants (id) SELECT 'bulk_' || g FROM generate_series(0, 499) g`;
    await db.sql`
      INSERT INTO endpoints (id, tenant_id, url, event_types)
      SELECT 'ep_bulk_' || g, 'bulk_' || (g % 500), 'http://127.0.0.1:9/bulk', ARRAY['order.created']
      FROM generate_series(1, 5000) g`;
    await db.sql`ANALYZE endpoints`;
    const plan = await db.sql`
      EXPLAIN SELECT e.id FROM endpoints e
      WHERE hookpost_subscription_keys(e.tenant_id, e.event_types) && hookpost_event_match_keys('bulk_7', 'order.created')
        AND e.deleted_at IS NULL AND e.enabled`;
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(text, /endpoints_subscription_idx/, text);
    await db.sql`DELETE FROM endpoints WHERE id LIKE 'ep_bulk_%'`;
    await db.sql`DELETE FROM tenants WHERE id LIKE 'bulk_%'`;
  });

  it('event_id and Idempotency-Key are unique per tenant, not across tenants', async () => {
    await createEndpoint(t, 'http://127.0.0.1:9/i1', { tenant_id: 'idem_1' });
    await createEndpoint(t, 'http://127.0.0.1:9/i2', { tenant_id: 'idem_2' });
    const send = (tenant: string, headers: Record<string, string> = {}, eventId = 'evt_1') =>
      t.send(
        'POST',
        '/v1/deliveries',
        { tenant_id: tenant, event_type: 'x', event_id: eventId, payload: {} },
        headers,
      );
    const first = await send('idem_1');
    const other = await send('idem_2');
    const again = await send('idem_1');
    assert.equal(first.status, 202);
    assert.equal(other.status, 202, 'the same event_id in another tenant is another event');
    assert.equal(again.status, 200, 'the same event_id in the same tenant is a duplicate');
    const [a, b, c] = [await first.json(), await other.json(), await again.json()];
    assert.notEqual(a.message_id, b.message_id);
    assert.equal(c.message_id, a.message_id);
    const key = { 'idempotency-key': 'k-1' };
    assert.equal((await send('idem_1', key, 'evt_k1')).status, 202);
    assert.equal((await send('idem_2', key, 'evt_k2')).status, 202);
    assert.equal((await send('idem_1', key, 'evt_k1')).status, 200);
    const [m] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE tenant_id IN ('idem_1', 'idem_2')`;
    assert.equal(m!.n, 4);
  });

  it('an explicit endpoint must belong to the named tenant; a deleted one is 404 and queues nothing', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/own', { tenant_id: 'owner' });
    const wrong = await t.send('POST', '/v1/deliveries', {
      tenant_id: 'someone_else',
      endpoint_id: ep.id,
      event_type: 'x',
      payload: {},
    });
    assert.equal(wrong.status, 404);
    assert.equal((await wrong.json()).error.code, 'endpoint_not_found');
    const right = await t.send('POST', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'x',
      payload: {},
    });
    assert.equal(right.status, 202);
    const [msg] = await db.sql`SELECT tenant_id FROM messages WHERE id = ${(await right.json()).message_id}`;
    assert.equal(msg!.tenant_id, 'owner', "the message takes the endpoint's tenant");
    assert.equal((await t.send('DELETE', `/v1/endpoints/${ep.id}`)).status, 204);
    const gone = await t.send('POST', '/v1/deliveries', { endpoint_id: ep.id, event_type: 'x', payload: {} });
    assert.equal(gone.status, 404);
  });

  it('a delete racing an enqueue to the same endpoint never leaves a queued delivery behind', async () => {
    for (let round = 0; round < 5; round++) {
      const ep = await createEndpoint(t, 'http://127.0.0.1:9/race', { tenant_id: 'race' });
      const items = Array.from({ length: 200 }, (_, i) => ({
        endpoint_id: ep.id,
        event_type: 'x',
        payload: { i },
      }));
      const [enq] = await Promise.all([
        t.send('POST', '/v1/deliveries/batch', { items }),
        new Promise((r) => setTimeout(r, round * 3)).then(() => t.send('DELETE', `/v1/endpoints/${ep.id}`)),
      ]);
      assert.ok([202, 404].includes(enq.status), `enqueue answered ${enq.status}`);
      const [left] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep.id}`;
      assert.equal(left!.n, 0, `round ${round}: deliveries left queued for a deleted endpoint`);
    }
  });

  it('PUT creates (201) then updates (200); GET shows counts; DELETE removes endpoints and cancels queued deliveries', async () => {
    const created = await t.send('PUT', '/v1/tenants/customer_42', {
      name: 'Customer 42',
      metadata: { plan: 'pro' },
    });
    assert.equal(created.status, 201);
    const updated = await t.send('PUT', '/v1/tenants/customer_42', { name: 'Customer Forty-Two' });
    assert.equal(updated.status, 200);
    assert.deepEqual((await updated.json()).metadata, { plan: 'pro' }, 'fields not given are kept');
    assert.equal((await t.send('PUT', '/v1/tenants/bad id!', {})).status, 400);
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/c42', { tenant_id: 'customer_42' });
    await t.send('POST', '/v1/deliveries', { endpoint_id: ep.id, event_type: 'x', payload: {} });
    const got = await (await t.send('GET', '/v1/tenants/customer_42')).json();
    assert.equal(got.name, 'Customer Forty-Two');
    assert.equal(got.endpoints, 1);
    assert.equal(got.queued_deliveries, 1);
    const list = await (await t.send('GET', '/v1/tenants?limit=500')).json();
    assert.ok(list.data.some((x: { id: string }) => x.id === 'customer_42'));
    assert.ok(list.data.some((x: { id: string }) => x.id === 'default'));
    const deleted = await t.send('DELETE', '/v1/tenants/customer_42');
    assert.equal(deleted.status, 200);
    assert.deepEqual({ e: (await deleted.json()).endpoints_deleted }, { e: 1 });
    assert.equal((await t.send('GET', '/v1/tenants/customer_42')).status, 404);
    assert.equal((await t.send('GET', `/v1/endpoints/${ep.id}`)).status, 404);
    const [d] = await db.sql`SELECT d.status FROM deliveries d WHERE d.endpoint_id = ${ep.id}`;
    assert.equal(d!.status, 'cancelled', 'queued deliveries cancelled, history kept');
    assert.equal((await t.send('DELETE', '/v1/tenants/hookpost')).status, 409);
  });

  it('deleting a tenant revokes its keys and portal sessions; only a PUT brings it back', async () => {
    const key = await keySender(t, { scopes: ['endpoints:read', 'deliveries:write'], tenant_id: 'leaving' });
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/leaving', { tenant_id: 'leaving' });
    const session = await (await t.send('POST', '/v1/tenants/leaving/portal-sessions', {})).json();
    const portal = { authorization: `Bearer ${session.token}` };
    assert.equal((await key.send('GET', `/v1/endpoints/${ep.id}`)).status, 200);
    assert.equal((await t.send('GET', `/v1/endpoints/${ep.id}`, undefined, portal)).status, 200);

    const deleted = await t.send('DELETE', '/v1/tenants/leaving');
    assert.equal(deleted.status, 200);
    assert.equal((await deleted.json()).api_keys_revoked, 2, 'the key and the portal session');
    const at = Date.now();
    // The key cache lasts a second: both are refused within the contract's 2 s.
    await waitFor('the key and the session to be refused', async () => {
      const [a, b] = await Promise.all([
        key.send('GET', '/v1/endpoints'),
        t.send('GET', '/v1/endpoints', undefined, portal),
      ]);
      return a.status === 401 && b.status === 401;
    });
    assert.ok(Date.now() - at < 2000, `refused after ${Date.now() - at} ms`);
    const [revoked] = await db.sql`SELECT count(*)::int AS n FROM api_keys
      WHERE tenant_id = 'leaving' AND revoked_at IS NOT NULL`;
    assert.equal(revoked!.n, 2);

    // Nothing brings it back implicitly: not an enqueue, a batch, an endpoint create or a key.
    const expectGone = async (res: Promise<Response>, what: string) => {
      const r = await res;
      assert.equal(r.status, 404, `${what}: ${r.status}`);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'tenant_not_found', what);
    };
    await expectGone(
      t.send('POST', '/v1/deliveries', { tenant_id: 'leaving', event_type: 'x', payload: {} }),
      'enqueue',
    );
    const batch = await t.send('POST', '/v1/deliveries/batch', {
      items: [
        { tenant_id: 'default', event_type: 'x', payload: {} },
        { tenant_id: 'leaving', event_type: 'x', payload: {} },
      ],
    });
    assert.equal(batch.status, 404);
    assert.deepEqual((await batch.json()).error.details, { index: 1 }, 'the item naming it');
    await expectGone(
      t.send('POST', '/v1/endpoints', { tenant_id: 'leaving', url: 'http://127.0.0.1:9/again' }),
      'endpoint create',
    );
    await expectGone(
      t.send('POST', '/v1/api-keys', { name: 'again', scopes: ['endpoints:read'], tenant_id: 'leaving' }),
      'key create',
    );
    await expectGone(t.send('POST', '/v1/tenants/leaving/portal-sessions', {}), 'portal session');
    assert.equal((await t.send('GET', '/v1/tenants/leaving')).status, 404, 'still deleted');
    const [msgs] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE tenant_id = 'leaving'`;
    assert.equal(msgs!.n, 0, 'the refused enqueues wrote nothing');

    // An explicit PUT brings it back; its old keys stay revoked.
    assert.equal((await t.send('PUT', '/v1/tenants/leaving', { name: 'Back' })).status, 201);
    assert.equal((await key.send('GET', '/v1/endpoints')).status, 401, 'the old key stays revoked');
    await createEndpoint(t, 'http://127.0.0.1:9/back', { tenant_id: 'leaving' });
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { tenant_id: 'leaving', event_type: 'x', payload: {} })).status,
      202,
    );
  });

  it('an endpoint create racing the deletion of its tenant never leaves a live endpoint behind', async () => {
    for (let round = 0; round < 6; round++) {
      const tenant = `racing_${round}`;
      await t.send('PUT', `/v1/tenants/${tenant}`, {});
      const creates = Array.from({ length: 4 }, (_, i) =>
        new Promise((r) => setTimeout(r, i * round)).then(() =>
          t.send('POST', '/v1/endpoints', { tenant_id: tenant, url: `http://127.0.0.1:9/r${i}` }),
        ),
      );
      const [deleted, ...created] = await Promise.all([
        t.send('DELETE', `/v1/tenants/${tenant}`),
        ...creates,
      ]);
      assert.equal(deleted.status, 200);
      for (const c of created) assert.ok([201, 404].includes(c.status), `create answered ${c.status}`);
      const [live] = await db.sql`SELECT count(*)::int AS n FROM endpoints
        WHERE tenant_id = ${tenant} AND deleted_at IS NULL`;
      assert.equal(live!.n, 0, `round ${round}: a live endpoint in a deleted tenant`);
    }
  });

  it('the tenant hookpost is for admin keys only: for any other key it does not exist', async () => {
    const unbound = await keySender(t, { scopes: ['deliveries:write', 'endpoints:write'] });
    const res = await unbound.send('POST', '/v1/deliveries', {
      tenant_id: 'hookpost',
      event_type: 'x',
      payload: {},
    });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, 'tenant_not_found');
    const bound = await keySender(t, { scopes: ['deliveries:write'], tenant_id: 'ops_b' });
    assert.equal(
      (await bound.send('POST', '/v1/deliveries', { tenant_id: 'hookpost', event_type: 'x', payload: {} }))
        .status,
      404,
    );
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { tenant_id: 'hookpost', event_type: 'x', payload: {} }))
        .status,
      202,
    );
  });

  it('portal sessions: a short-lived key bound to the tenant, token in the URL fragment', async () => {
    await t.send('PUT', '/v1/tenants/partner_7', {});
    const mine = await createEndpoint(t, 'http://127.0.0.1:9/p7', { tenant_id: 'partner_7' });
    const theirs = await createEndpoint(t, 'http://127.0.0.1:9/p8', { tenant_id: 'partner_8' });
    const res = await t.send('POST', '/v1/tenants/partner_7/portal-sessions', { expires_in_seconds: 600 });
    assert.equal(res.status, 201);
    const session = await res.json();
    assert.match(session.url, /\/portal#token=hpk_/);
    assert.ok(!session.url.split('#')[0].includes(session.token), 'the token is only in the fragment');
    assert.deepEqual(session.scopes, ['endpoints:read', 'endpoints:write', 'deliveries:read', 'replay']);
    const left = Date.parse(session.expires_at) - Date.now();
    assert.ok(left > 590_000 && left <= 600_000);
    const auth = { authorization: `Bearer ${session.token}` };
    assert.equal((await t.send('GET', `/v1/endpoints/${mine.id}`, undefined, auth)).status, 200);
    assert.equal((await t.send('GET', `/v1/endpoints/${theirs.id}`, undefined, auth)).status, 404);
    // What the portal asks before it adopts a session link: whose session this is.
    const whoami = await t.send('GET', '/v1/whoami', undefined, auth);
    assert.equal(whoami.status, 200);
    assert.deepEqual(await whoami.json(), {
      key_id: session.id,
      name: 'portal session for partner_7',
      tenant_id: 'partner_7',
      scopes: session.scopes,
    });
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { event_type: 'x', payload: {} }, auth)).status,
      403,
    );
    assert.equal(
      (await t.send('POST', '/v1/tenants/partner_7/portal-sessions', {})).status,
      201,
      'body optional',
    );
    assert.equal(
      (await t.send('POST', '/v1/tenants/partner_7/portal-sessions', { expires_in_seconds: 86_401 })).status,
      400,
    );
    assert.equal((await t.send('POST', '/v1/tenants/nobody/portal-sessions', {})).status, 404);
  });

  it('the audit log names who did what, links replays, and never holds a secret', async () => {
    const actor = await keySender(t, {
      scopes: ['endpoints:write', 'replay'],
      tenant_id: 'audited',
      name: 'ops bot',
    });
    const ep = await (
      await actor.send('POST', '/v1/endpoints', {
        url: 'http://127.0.0.1:9/aud',
        headers: { 'x-api-key': 's3cr3t-h' },
      })
    ).json();
    const rotated = await (await actor.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`)).json();
    await actor.send('PATCH', `/v1/endpoints/${ep.id}`, { description: 'changed' });
    const replay = await (
      await actor.send('POST', '/v1/dead-letters/replay', { endpoint_id: ep.id, dry_run: true })
    ).json();
    await t.send('POST', '/v1/tenants/audited/portal-sessions', {});
    const log = await (await t.send('GET', '/v1/audit-log?limit=500')).json();
    const mine = log.data.filter((r: { tenant_id: string }) => r.tenant_id === 'audited');
    const actions = mine.map((r: { action: string }) => r.action);
    for (const a of [
      'endpoint.created',
      'endpoint.secret_rotated',
      'endpoint.updated',
      'replay.started',
      'portal_session.created',
    ]) {
      assert.ok(actions.includes(a), `missing ${a}`);
    }
    const created = mine.find((r: { action: string }) => r.action === 'endpoint.created');
    assert.equal(created.actor_key_id, actor.id);
    assert.equal(created.actor_name, 'ops bot');
    assert.equal(created.resource_id, ep.id);
    const replayRow = mine.find((r: { action: string }) => r.action === 'replay.started');
    assert.equal(replayRow.resource_id, replay.audit_id);
    assert.equal(replayRow.replay.state, 'finished', 'the replay progress is joined');
    const text = JSON.stringify(log);
    for (const secret of [ep.secret, rotated.secret, 's3cr3t-h', actor.key]) {
      assert.ok(!text.includes(secret), 'a secret is in the audit log');
    }
    const page = await (await t.send('GET', '/v1/audit-log?limit=2')).json();
    const next = await (await t.send('GET', `/v1/audit-log?limit=2&cursor=${page.next_cursor}`)).json();
    assert.ok(next.data[0].id < page.data[1].id, 'keyset pages go back in time');
  });
});
