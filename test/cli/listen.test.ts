/**
 * `hookpost listen` as a process: it verifies each delivery with the Standard Webhooks verifier,
 * prints one line per delivery and answers 200; end to end, a real `hookpost start` delivers to
 * it and the line says `verified`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, type TestDatabase, waitFor } from '../helpers.js';
import { freePort, type HookpostProcess, runHookpost } from './process.js';

const SECRET = `whsec_${Buffer.from('listen-test-secret-24byt').toString('base64')}`;

describe('hookpost listen', () => {
  let listener: HookpostProcess;
  let url: string;
  before(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/`;
    listener = runHookpost(['listen', '--port', String(port), '--secret', SECRET], {});
    await listener.waitForOutput(`receiving webhooks on ${url}`);
  });
  after(async () => {
    if (listener) assert.equal(await listener.stop('SIGINT'), 0, listener.output());
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  it('verifies a correctly signed delivery, prints its line and answers 200', async () => {
    const body = '{"type":"order.created","data":{"order_id":42}}';
    const now = new Date();
    const signature = new Webhook(SECRET).sign('msg_listen1', now, body);
    const res = await post(body, {
      'webhook-id': 'msg_listen1',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    });
    assert.equal(res.status, 200);
    const out = await listener.waitForOutput(/msg_listen1.*\n/);
    assert.match(out, /msg_listen1 {2}order\.created {2}verified {2}47 bytes/);
  });

  it('says NOT VERIFIED for a wrong signature (and still answers 2xx)', async () => {
    const res = await post('{"type":"x"}', {
      'webhook-id': 'msg_listen2',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
    });
    assert.equal(res.status, 200);
    const out = await listener.waitForOutput(/msg_listen2.*\n/);
    assert.match(out, /msg_listen2 {2}x {2}NOT VERIFIED \(No matching signature found\)/);
  });

  it('refuses a secret that is not whsec_ with its own help (exit 2)', async () => {
    const bad = runHookpost(['listen', '--secret', 'hunter2'], {});
    assert.equal(await bad.exited, 2);
    assert.match(bad.output(), /--secret must be the endpoint's secret/);
    assert.match(bad.output(), /Usage: hookpost listen/);
    assert.doesNotMatch(bad.output(), /Commands:/);
  });
});

describe('hookpost start → hookpost listen, end to end', () => {
  let db: TestDatabase;
  let server: HookpostProcess;
  let listener: HookpostProcess | undefined;
  let api: string;
  const TOKEN = 'listen-e2e-token-0123456789';
  before(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    server = runHookpost(['start'], {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
    });
    await server.waitForOutput('hookpost is listening');
  });
  after(async () => {
    if (listener) await listener.stop('SIGINT');
    if (server) assert.equal(await server.stop('SIGTERM'), 0, server.output());
    await db?.drop();
  });

  it('a delivery from hookpost arrives verified', async () => {
    const listenPort = await freePort();
    const call = async (route: string, body: unknown) => {
      const res = await fetch(api + route, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.ok(res.ok, `${route}: ${res.status} ${await res.clone().text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    const endpoint = await call('/v1/endpoints', { url: `http://127.0.0.1:${listenPort}/` });
    listener = runHookpost(['listen', '--port', String(listenPort), '--secret', String(endpoint.secret)], {});
    await listener.waitForOutput('receiving webhooks');
    const queued = await call('/v1/deliveries', {
      endpoint_id: endpoint.id,
      event_type: 'order.created',
      payload: { type: 'order.created', data: { order_id: 42 } },
    });
    const messageId = String(queued.message_id);
    await waitFor('the delivery at hookpost listen', () => listener!.output().includes(messageId), 30000);
    assert.match(listener.output(), new RegExp(`${messageId} {2}order\\.created {2}verified {2}\\d+ bytes`));
  });
});
