import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { EndpointCache } from '../../src/dispatch/endpoint-cache.js';
import { createSecretBox } from '../../src/endpoints/secrets.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('endpoint changes show in the very next attempt', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db);
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function receiver() {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }
  /** Enqueues one delivery and waits for it to be delivered; returns the request that carried it. */
  async function deliverOne(endpointId: string, to: Receiver) {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: {},
    });
    const messageId = (await res.json()).message_id;
    const request = await waitFor(`message ${messageId}`, () =>
      to.requests.find((r) => r.headers['webhook-id'] === messageId),
    );
    return request!;
  }

  it('signs with the new and the old secret right after a rotation, and with at most three', async () => {
    const r = await receiver();
    const ep = await (await t.send('POST', '/v1/endpoints', { url: r.url })).json();
    await deliverOne(ep.id, r); // the dispatcher now holds this endpoint in its cache
    const rotated = await (await t.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`)).json();
    const next = await deliverOne(ep.id, r);
    const headers = next.headers as Record<string, string>;
    assert.equal(headers['webhook-signature']!.split(' ').length, 2, 'no wait for a cache to expire');
    new Webhook(ep.secret).verify(next.body.toString(), headers);
    new Webhook(rotated.secret).verify(next.body.toString(), headers);

    const secrets = [ep.secret, rotated.secret];
    for (let i = 0; i < 3; i++) {
      secrets.push((await (await t.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`)).json()).secret);
    }
    const bounded = await deliverOne(ep.id, r);
    const signatures = (bounded.headers['webhook-signature'] as string).split(' ');
    assert.equal(signatures.length, 3, 'five rotations within the grace period: three active secrets');
    for (const secret of secrets.slice(-3)) {
      new Webhook(secret).verify(bounded.body.toString(), bounded.headers as Record<string, string>);
    }
    assert.throws(() =>
      new Webhook(secrets[1]!).verify(bounded.body.toString(), bounded.headers as Record<string, string>),
    );
  });

  it('sends to a new URL and with new headers in the next attempt after a PATCH', async () => {
    const first = await receiver();
    const second = await receiver();
    const ep = await (
      await t.send('POST', '/v1/endpoints', { url: first.url, headers: { 'X-Version': 'one' } })
    ).json();
    await deliverOne(ep.id, first);
    const patched = await t.send('PATCH', `/v1/endpoints/${ep.id}`, {
      url: second.url,
      headers: { 'X-Version': 'two' },
    });
    assert.equal(patched.status, 200);
    const next = await deliverOne(ep.id, second);
    assert.equal(next.headers['x-version'], 'two');
    assert.equal(first.requests.length, 1);
  });

  it('sees a disable at the next claim batch, and a rotation announced by NOTIFY before sending', async () => {
    const r = await receiver();
    const ep = await (await t.send('POST', '/v1/endpoints', { url: r.url })).json();
    const cache = new EndpointCache(db.sql, createSecretBox(undefined));
    await cache.start();
    try {
      assert.equal((await cache.getMany([ep.id])).get(ep.id)?.enabled, true);
      await t.send('PATCH', `/v1/endpoints/${ep.id}`, { enabled: false });
      assert.equal((await cache.getMany([ep.id])).get(ep.id)?.enabled, false, 'checked per batch');
      // max_in_flight makes its results be written at once (completions.ts): seen per batch too.
      assert.equal((await cache.getMany([ep.id])).get(ep.id)?.inFlightLimited, false);
      await t.send('PATCH', `/v1/endpoints/${ep.id}`, { max_in_flight: 2 });
      assert.equal((await cache.getMany([ep.id])).get(ep.id)?.inFlightLimited, true);
      // A job already claimed (held in the local buffer) asks fresh() at send time: the NOTIFY
      // from the rotation marks its entry stale, without any further claim.
      await t.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`);
      await waitFor(
        'the rotation to reach the cache',
        async () => (await cache.fresh(ep.id))?.keys.length === 2,
      );
    } finally {
      await cache.stop();
    }
  });
});
