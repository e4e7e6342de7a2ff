/**
 * POST /v1/endpoints/{id}/test-event: a portal-session key (endpoints:write, no deliveries:write)
 * sends one signed hookpost.test event to its own endpoint, the receiver verifies it with the
 * official Standard Webhooks library; the same key cannot enqueue its own payloads nor reach
 * another tenant's endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
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

describe('test event to one endpoint', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    receiver = await startReceiver();
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  it('a portal session sends a signed hookpost.test to its own endpoint only', async () => {
    const a = await createEndpoint(t, receiver, { tenant_id: 'tenant_a', event_types: ['order.*'] });
    const b = await createEndpoint(t, receiver, { tenant_id: 'tenant_b' });
    const session = await (await t.send('POST', '/v1/tenants/tenant_a/portal-sessions', {})).json();
    const send = (method: string, path: string, body?: unknown) =>
      t.send(method, path, body, { authorization: `Bearer ${session.token}` });

    // The portal key cannot enqueue a payload of its own choosing.
    const refused = await send('POST', '/v1/deliveries', {
      endpoint_id: a.id,
      event_type: 'order.paid',
      payload: {},
    });
    assert.equal(refused.status, 403);
    // Another tenant's endpoint is unknown to it.
    const cross = await send('POST', `/v1/endpoints/${b.id}/test-event`);
    assert.equal(cross.status, 404);
    assert.equal((await cross.json()).error.code, 'endpoint_not_found');

    const res = await send('POST', `/v1/endpoints/${a.id}/test-event`);
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.deepEqual(
      body.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id),
      [a.id],
      'sent whatever the endpoint subscribes to',
    );
    await waitFor('test event received', () => receiver.requests.length === 1);
    const got = receiver.requests[0]!;
    const verified = new Webhook(a.secret).verify(got.body.toString(), {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    }) as { type: string; data: { tenant_id: string; endpoint_id: string } };
    assert.equal(verified.type, 'hookpost.test');
    assert.deepEqual([verified.data.tenant_id, verified.data.endpoint_id], ['tenant_a', a.id]);
    assert.equal(got.headers['webhook-id'], body.message_id);

    // Listed like any delivery of the tenant's.
    const listed = await (await send('GET', '/v1/deliveries?event_type=hookpost.test')).json();
    assert.deepEqual(
      listed.data.map((d: { id: string }) => d.id),
      [body.deliveries[0].id],
    );
  });

  it('answers 404 for an unknown endpoint and 403 for a key without endpoints:write', async () => {
    assert.equal((await t.send('POST', '/v1/endpoints/ep_missing/test-event')).status, 404);
    const ep = await createEndpoint(t, receiver);
    const key = await (
      await t.send('POST', '/v1/api-keys', { name: 'reader', scopes: ['endpoints:read'] })
    ).json();
    const res = await t.send('POST', `/v1/endpoints/${ep.id}/test-event`, undefined, {
      authorization: `Bearer ${key.key}`,
    });
    assert.equal(res.status, 403);
  });
});
