/**
 * @hookpost/client in a real browser (Debian's Chromium): the compiled ES modules load as they
 * are (openapi-fetch through an import map, nothing Node-only), the client calls the real app on
 * a real database from the page, and verifyWebhook checks v1 and v1a signatures made by
 * hookpost's signer with the browser's own WebCrypto.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getRequestListener } from '@hono/node-server';
import type { Browser } from 'playwright-core';
import * as clientModule from '../../clients/typescript/src/index.js';
import { signatureHeader, signingKey } from '../../src/dispatch/signing.js';
import { generateSecret, generateSigningKeyPair } from '../../src/endpoints/secrets.js';
import { createTestApp, createTestDatabase, type TestDatabase, TOKEN } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, type Watched, watchedContext } from '../ui/browser.js';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ROOT = path.resolve(DIST, '..');

const PAGE = `<!doctype html><meta charset="utf-8"><title>client</title>
<script type="importmap">{"imports": {"openapi-fetch": "/static/openapi-fetch.mjs"}}</script>
<script type="module">
  import * as hookpost from '/static/client/index.js';
  window.hookpost = hookpost;
  document.title = 'ready';
</script>`;

/** Static files for the page; everything else goes to the hookpost app. */
function staticFile(url: string): string | undefined {
  if (url === '/static/openapi-fetch.mjs')
    return path.join(ROOT, 'node_modules/openapi-fetch/dist/index.mjs');
  const match = /^\/static\/client\/([\w/.-]+\.js)$/.exec(url);
  return match && !match[1]!.includes('..')
    ? path.join(DIST, 'clients/typescript/src', match[1]!)
    : undefined;
}

function signed(secret: string, body: string) {
  const id = 'msg_browser';
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = signatureHeader([signingKey(secret)], id, timestamp, Buffer.from(body));
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

describe('@hookpost/client in Chromium', {
  skip: skipUnlessInstalled(['chromium'], 'apt-get install chromium'),
}, () => {
  let db: TestDatabase;
  let server: http.Server;
  let origin: string;
  let browser: Browser;
  let watched: Watched;

  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db);
    const api = getRequestListener(t.app.fetch);
    server = http.createServer(async (req, res) => {
      if (req.url === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      const file = staticFile(req.url ?? '');
      if (file) {
        const text = await readFile(file).catch(() => undefined);
        if (!text) return void res.writeHead(404).end();
        return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(text);
      }
      return api(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    watched = await watchedContext(browser);
  });
  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await db?.drop();
  });

  it('calls the API and verifies v1 and v1a signatures in the page', async () => {
    const page = await watched.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction("document.title === 'ready'");

    const secret = generateSecret();
    const pair = generateSigningKeyPair();
    const body = '{"order_id":"b1"}';
    const cases = {
      token: TOKEN,
      v1: { headers: signed(secret, body), body, key: secret },
      v1a: { headers: signed(pair.privateKey, body), body, key: pair.publicKey },
      tampered: { headers: signed(secret, body), body: body.replace('b1', 'b2'), key: secret },
    };
    const result = await page.evaluate(async (c) => {
      // biome-ignore lint/suspicious/noExplicitAny: the page's window (no DOM types here) and its module
      const page = globalThis as any;
      const h = page.hookpost;
      const client = h.createHookpostClient({ baseUrl: page.location.origin, token: c.token });
      const endpoint = await client.POST('/v1/endpoints', { body: { url: 'http://127.0.0.1:9/hook' } });
      const order = { endpoint_id: endpoint.data.id, event_type: 'order.created', payload: { n: 1 } };
      const key = { header: { 'Idempotency-Key': 'browser-1' } };
      const first = await client.POST('/v1/deliveries', { body: order, params: key });
      const conflict = await client.POST('/v1/deliveries', {
        body: { ...order, payload: { n: 2 } },
        params: key,
      });
      await client.POST('/v1/endpoints', { body: { url: 'http://127.0.0.1:9/second' } });
      const listed = [];
      for await (const e of client.list('/v1/endpoints', { params: { query: { limit: '1' } } }))
        listed.push(e.id);
      const verdict = (v: { headers: Record<string, string>; body: string; key: string }) =>
        h
          .verifyWebhook({
            headers: new Headers(v.headers),
            body: new TextEncoder().encode(v.body),
            key: v.key,
          })
          .then(
            (payload: unknown) => ({ payload }),
            (error: { reason: string; name: string }) => ({ reason: error.reason, name: error.name }),
          );
      return {
        exports: Object.keys(h).sort(),
        firstStatus: first.response.status,
        conflict: {
          isHookpostError: conflict.error instanceof h.HookpostError,
          status: conflict.error?.status,
          code: conflict.error?.code,
        },
        listed: listed.length,
        v1: await verdict(c.v1),
        v1a: await verdict(c.v1a),
        tampered: await verdict(c.tampered),
      };
    }, cases);

    assert.deepEqual(result.exports, Object.keys(clientModule).sort(), 'the page sees what Node sees');
    assert.equal(result.firstStatus, 202);
    assert.deepEqual(result.conflict, { isHookpostError: true, status: 409, code: 'idempotency_conflict' });
    assert.equal(result.listed, 2);
    assert.deepEqual(result.v1, { payload: { order_id: 'b1' } });
    assert.deepEqual(result.v1a, { payload: { order_id: 'b1' } });
    assert.deepEqual(result.tampered, { reason: 'no_matching_signature', name: 'WebhookVerificationError' });
    // The 409 is the conflict asked for above; Chromium logs every non-2xx load.
    const unexpected = watched.problems.filter((p) => !p.includes('status of 409 (Conflict)'));
    assert.deepEqual(unexpected, []);
    assert.deepEqual(watched.blocked, []);
  });
});
