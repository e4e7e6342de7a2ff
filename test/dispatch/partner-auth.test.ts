import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
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

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;
const KEY = 'partner-auth-test-key-0123456789';

describe('dispatcher: Basic auth and a legacy signature beside the Standard Webhooks headers', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    dispatcher = await startTestDispatcher(db, { HOOKPOST_SECRET_KEY: KEY });
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function deliverOne(extra: Record<string, unknown>) {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const ep = await createEndpoint(t, receiver, extra);
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'x',
      payload: { a: 1 },
    });
    assert.equal(res.status, 202);
    await waitFor('the delivery', () => receiver.requests.length > 0);
    return { ep, request: receiver.requests[0]! };
  }

  function assertStandardWebhooks(request: Receiver['requests'][number], secret: string) {
    const h = request.headers as Record<string, string>;
    new Webhook(secret).verify(request.body.toString(), {
      'webhook-id': h['webhook-id']!,
      'webhook-timestamp': h['webhook-timestamp']!,
      'webhook-signature': h['webhook-signature']!,
    });
  }

  it('sends Authorization: Basic with the stored user name and password', async () => {
    const { ep, request } = await deliverOne({
      auth: { type: 'basic', username: 'acme', password: 'pässword-1' },
    });
    const expected = `Basic ${Buffer.from('acme:pässword-1', 'latin1').toString('base64')}`;
    assert.equal(request.headers.authorization, expected);
    assertStandardWebhooks(request, ep.secret);
  });

  it('signs `timestamp.body` in hex with a prefix and sends the timestamp header', async () => {
    const { ep, request } = await deliverOne({
      legacy_signature: {
        header: 'X-Old-Signature',
        secret: 'old-secret',
        encoding: 'hex',
        prefix: 'sha256=',
        content: 'timestamp.body',
        timestamp_header: 'X-Old-Timestamp',
      },
    });
    const timestamp = request.headers['x-old-timestamp'] as string;
    assert.equal(timestamp, request.headers['webhook-timestamp'], 'the same instant as the standard one');
    const digest = createHmac('sha256', 'old-secret')
      .update(`${timestamp}.`)
      .update(request.body)
      .digest('hex');
    assert.equal(request.headers['x-old-signature'], `sha256=${digest}`);
    assertStandardWebhooks(request, ep.secret);
  });

  it('signs the body alone in base64 when asked', async () => {
    const { ep, request } = await deliverOne({
      legacy_signature: { header: 'X-Hub-Signature', secret: 'hub', encoding: 'base64', content: 'body' },
    });
    const digest = createHmac('sha256', 'hub').update(request.body).digest('base64');
    assert.equal(request.headers['x-hub-signature'], digest);
    assertStandardWebhooks(request, ep.secret);
  });

  it('a changed secret shows in the next attempt', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const legacy = { header: 'X-Sig', secret: 'first', encoding: 'hex', content: 'body' };
    const ep = await createEndpoint(t, receiver, { legacy_signature: legacy });
    await t.send('PATCH', `/v1/endpoints/${ep.id}`, { legacy_signature: { ...legacy, secret: 'second' } });
    await t.send('POST', '/v1/deliveries', { endpoint_id: ep.id, event_type: 'x', payload: { b: 2 } });
    await waitFor('the delivery', () => receiver.requests.length > 0);
    const request = receiver.requests[0]!;
    assert.equal(request.headers['x-sig'], createHmac('sha256', 'second').update(request.body).digest('hex'));
  });
});
