/**
 * `hookpost listen` as a process: it verifies each delivery with the Standard Webhooks verifier,
 * prints one line per delivery and answers 200; end to end, a real `hookpost start` delivers to
 * it and the line says `verified`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, type TestDatabase, waitFor } from '../helpers.js';
import { freePort, type HookpostProcess, runHookpost, UNUSED_DATA_DIR } from './process.js';

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

describe('hookpost listen --status, --delay-ms and hookpost-sequence', () => {
  let listener: HookpostProcess;
  let url: string;
  before(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/`;
    listener = runHookpost(
      ['listen', '--port', String(port), '--secret', SECRET, '--status', '503', '--delay-ms', '300'],
      {},
    );
    await listener.waitForOutput(`receiving webhooks on ${url}`);
  });
  after(async () => {
    if (listener) assert.equal(await listener.stop('SIGINT'), 0, listener.output());
  });

  it('answers with the status asked for, after the delay, and prints the sequence number', async () => {
    assert.match(listener.output(), /answering 503 after 300 ms; Ctrl-C stops/);
    const body = '{"type":"order.created"}';
    const now = new Date();
    const started = Date.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_listen_seq',
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(SECRET).sign('msg_listen_seq', now, body),
        'hookpost-sequence': '7',
      },
      body,
    });
    assert.equal(res.status, 503);
    assert.ok(Date.now() - started >= 290, 'answered after the delay');
    const out = await listener.waitForOutput(/msg_listen_seq.*\n/);
    assert.match(
      out,
      /msg_listen_seq {2}order\.created {2}seq 7 {2}verified {2}24 bytes {2}answered 503 after 300 ms/,
    );
  });

  it('refuses options that cannot work, with its help (exit 2)', async () => {
    for (const [args, message] of [
      [['--status', '99'], /--status must be a whole number from 200 to 599/],
      [['--delay-ms', '1.5'], /--delay-ms must be a whole number/],
      [['--secret', SECRET, '--subscribe', 'a'], /--secret and --subscribe do not go together/],
      [['--api', 'http://127.0.0.1:1'], /--api goes with --subscribe/],
      [['--secret', ''], /--secret is empty/],
    ] as const) {
      const bad = runHookpost(['listen', ...args], {});
      assert.equal(await bad.exited, 2, bad.output());
      assert.match(bad.output(), message);
      assert.match(bad.output(), /Usage: hookpost listen/);
    }
  });

  it('--subscribe without a token or a running hookpost says what to do (never waits)', async () => {
    const noToken = runHookpost(['listen', '--port', String(await freePort()), '--subscribe', 'a'], {
      HOOKPOST_DATA_DIR: UNUSED_DATA_DIR,
    });
    assert.equal(await noToken.exited, 2, noToken.output());
    assert.match(noToken.output(), /needs hookpost's admin token.*HOOKPOST_ADMIN_TOKEN/);
    const noServer = runHookpost(
      [
        'listen',
        '--port',
        String(await freePort()),
        '--subscribe',
        'a',
        '--api',
        `http://127.0.0.1:${await freePort()}`,
      ],
      { HOOKPOST_ADMIN_TOKEN: 'listen-test-token-0123456789' },
    );
    assert.equal(await noServer.exited, 1, noServer.output());
    assert.match(noServer.output(), /cannot reach hookpost at http:\/\/127\.0\.0\.1:\d+: is it running\?/);
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
