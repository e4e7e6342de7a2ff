import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
// An Ed25519 implementation independent of node:crypto/OpenSSL. The official `standardwebhooks`
// package (1.1.1, the latest) verifies only v1 (HMAC); its v1a support is an unmerged pull request.
import { verifyAsync } from '@noble/ed25519';
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
import { verifyV1aWithNode } from '../v1a-verify.js';

const KEY = 'v1a-test-key-0123456789';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

async function verifyWithNoble(publicKey: string, headers: Record<string, string>, body: Buffer) {
  const content = Buffer.concat([
    Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`),
    body,
  ]);
  const raw = Buffer.from(publicKey.slice(5), 'base64');
  return Promise.all(
    headers['webhook-signature']!.split(' ').map((s) =>
      verifyAsync(Buffer.from(s.split(',')[1]!, 'base64'), content, raw),
    ),
  );
}

describe('v1a: Ed25519 signatures', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    dispatcher = await startTestDispatcher(db, { HOOKPOST_SECRET_KEY: KEY });
    receiver = await startReceiver();
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  async function deliverOne(endpointId: string, payload: string) {
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${endpointId}","event_type":"x","payload":${payload}}`,
    );
    assert.equal(res.status, 202);
    const messageId = (await res.json()).message_id;
    const request = await waitFor('the delivery', () =>
      receiver.requests.find((r) => r.headers['webhook-id'] === messageId),
    );
    return { headers: request!.headers as Record<string, string>, body: request!.body };
  }

  it('creates a v1a endpoint that shows its whpk_ public key and keeps the whsk_ key sealed', async () => {
    const res = await t.send('POST', '/v1/endpoints', { url: receiver.url, signature_scheme: 'v1a' });
    assert.equal(res.status, 201);
    const created = await res.json();
    assert.equal(created.signature_scheme, 'v1a');
    assert.match(created.public_key, /^whpk_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.public_key.slice(5), 'base64').length, 32);
    assert.equal(created.secret, undefined, 'no private key or secret is handed out');
    const fetched = await (await t.send('GET', `/v1/endpoints/${created.id}`)).json();
    assert.equal(fetched.public_key, created.public_key);
    assert.ok(!JSON.stringify(fetched).includes('whsk_'));

    const [row] = await db.sql<{ secret: string; public_key: string }[]>`
      SELECT secret, public_key FROM endpoint_secrets WHERE endpoint_id = ${created.id}`;
    assert.match(row!.secret, /^v2:[0-9a-f]{12}:/, 'sealed at rest like HMAC secrets');
    assert.match(createSecretBox(KEY).open(row!.secret), /^whsk_/);
    assert.equal(row!.public_key, created.public_key);

    const v1 = await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json();
    assert.equal(v1.signature_scheme, 'v1', 'v1 stays the default');
    assert.equal(v1.public_key, null);
    assert.match(v1.secret, /^whsec_/);
    const bad = await t.send('POST', '/v1/endpoints', { url: receiver.url, signature_scheme: 'v2' });
    assert.equal(bad.status, 400);
  });

  it('signs {id}.{timestamp}.{body} so node:crypto and an independent verifier accept it', async () => {
    const ep = await (
      await t.send('POST', '/v1/endpoints', { url: receiver.url, signature_scheme: 'v1a' })
    ).json();
    const { headers, body } = await deliverOne(ep.id, '{"amount": 1.50,  "x":"é"}');
    assert.equal(body.toString(), '{"amount": 1.50,  "x":"é"}');
    assert.match(headers['webhook-signature']!, /^v1a,[A-Za-z0-9+/]{86}==$/);
    assert.deepEqual(verifyV1aWithNode(ep.public_key, headers, body), [true]);
    assert.deepEqual(await verifyWithNoble(ep.public_key, headers, body), [true]);
    // A changed body or another endpoint's key must not verify.
    assert.deepEqual(verifyV1aWithNode(ep.public_key, headers, Buffer.from('{}')), [false]);
    const other = await (
      await t.send('POST', '/v1/endpoints', { url: receiver.url, signature_scheme: 'v1a' })
    ).json();
    assert.deepEqual(await verifyWithNoble(other.public_key, headers, body), [false]);
  });

  it('signs with the new and the old key during the grace period after a rotation', async () => {
    const ep = await (
      await t.send('POST', '/v1/endpoints', { url: receiver.url, signature_scheme: 'v1a' })
    ).json();
    await deliverOne(ep.id, '{"before":true}');
    const rotated = await (await t.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`)).json();
    assert.match(rotated.public_key, /^whpk_/);
    assert.notEqual(rotated.public_key, ep.public_key);
    assert.equal(rotated.secret, undefined);
    const fetched = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.equal(fetched.public_key, rotated.public_key, 'GET shows the newest key');

    const { headers, body } = await deliverOne(ep.id, '{"after":true}');
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    // Newest first: the new key verifies the first signature, the old key the second.
    assert.deepEqual(verifyV1aWithNode(rotated.public_key, headers, body), [true, false]);
    assert.deepEqual(verifyV1aWithNode(ep.public_key, headers, body), [false, true]);
    assert.deepEqual(await verifyWithNoble(rotated.public_key, headers, body), [true, false]);
  });
});
