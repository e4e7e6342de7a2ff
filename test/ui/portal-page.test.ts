/**
 * /portal in real Chromium against a real server, dispatcher and local receivers: opened from a
 * portal-session URL of tenant A it lists only A's endpoints, takes the token out of the address
 * bar, creates an endpoint and shows its secret once, sends a signed test event that arrives, and
 * cannot reach tenant B's data (its API calls for B's ids answer 404). Framing follows
 * HOOKPOST_PORTAL_FRAME_ANCESTORS: a parent page of an allowed origin shows the portal in an
 * iframe, the same page framing a server with the default is refused by the browser.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  TOKEN,
  waitFor,
} from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import {
  launchChromium,
  localDateTime,
  measureTransfer,
  screenshot,
  type Watched,
  watchedContext,
} from './browser.js';

const skip = skipUnlessInstalled(['chromium'], 'apt-get install -y chromium');

describe('partner portal in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let served: ServedApp;
  let servedDefault: ServedApp;
  let parent: http.Server;
  let parentOrigin: string;
  let base: string;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let shots: string;
  let receiverA: Receiver;
  let receiverNew: Receiver;
  let receiverB: Receiver;
  let endpointA: string;
  let endpointB: string;
  let deliveryB: string;
  let sessionUrl: string;
  let sessionKeyId: string;
  /** Every /v1 response the portal page received: [status, url]. */
  const apiCalls: [number, string][] = [];

  async function deliver(endpointId: string, tenantId: string, payload: unknown): Promise<string> {
    const res = await t.send('POST', '/v1/deliveries', {
      tenant_id: tenantId,
      endpoint_id: endpointId,
      event_type: 'order.created',
      payload,
    });
    assert.equal(res.status, 202);
    return (await res.json()).deliveries[0].id;
  }

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-portal-'));
    // The "sending company's site": another origin (another port) that frames the portal.
    parent = http.createServer((req, res) => {
      const target = new URL(req.url ?? '/', 'http://x').searchParams.get('src') ?? '';
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<!doctype html><title>parent</title><iframe id="f" src="${target}" width="900" height="500"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => parent.listen(0, '127.0.0.1', resolve));
    parentOrigin = `http://127.0.0.1:${(parent.address() as AddressInfo).port}`;

    db = await createTestDatabase();
    t = await createTestApp(db, {
      HOOKPOST_PORTAL_FRAME_ANCESTORS: `https://app.example.com, ${parentOrigin}`,
    });
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    served = await serveApp(t.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${served.port}`;
    servedDefault = await serveApp((await createTestApp(db)).app, 0, '127.0.0.1');

    receiverA = await startReceiver();
    receiverNew = await startReceiver();
    receiverB = await startReceiver();
    for (const [name, description] of [
      ['order.created', 'An order was placed'],
      ['order.paid', 'An order was paid'],
      ['invoice.sent', 'An invoice went out'],
    ]) {
      assert.equal((await t.send('PUT', `/v1/event-types/${name}`, { description })).status, 201);
    }
    const a = await t.send('POST', '/v1/endpoints', {
      tenant_id: 'tenant_a',
      url: receiverA.url,
      description: 'orders service',
      event_types: ['order.*'],
    });
    endpointA = (await a.json()).id;
    const b = await t.send('POST', '/v1/endpoints', { tenant_id: 'tenant_b', url: receiverB.url });
    endpointB = (await b.json()).id;
    const deliveryA = await deliver(endpointA, 'tenant_a', { order: 1 });
    deliveryB = await deliver(endpointB, 'tenant_b', { secret_of_b: true });
    await waitFor('both delivered', async () => {
      const rows = await db.sql`SELECT status FROM deliveries WHERE id IN (${deliveryA}, ${deliveryB})`;
      return rows.length === 2 && rows.every((r) => r.status === 'delivered');
    });

    // Over real HTTP: the URL is built from the origin the request came to.
    const session = await fetch(`${base}/v1/tenants/tenant_a/portal-sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ expires_in_seconds: 900 }),
    });
    assert.equal(session.status, 201);
    ({ url: sessionUrl, id: sessionKeyId } = (await session.json()) as { url: string; id: string });

    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) apiCalls.push([r.status(), r.url()]);
    });
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await servedDefault?.close();
    await new Promise((resolve) => parent?.close(resolve));
    await dispatcher?.stop();
    await Promise.all([receiverA, receiverNew, receiverB].map((r) => r?.close()));
    await db?.drop();
    // Full-page shots are for a look while debugging; HOOKPOST_SCREENSHOTS_DIR keeps the README's.
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it("opens from the session URL and lists only tenant A's endpoints", async () => {
    assert.match(sessionUrl, new RegExp(`^${base}/portal#token=hpk_`));
    const weight = await measureTransfer(page, async () => {
      await page.goto(sessionUrl);
      await page.getByRole('heading', { name: 'Your endpoints' }).waitFor();
      await page.locator('tr', { hasText: endpointA }).waitFor();
      await page.waitForLoadState('networkidle');
    });
    // The token left the address bar (history, a copied link) for this tab's sessionStorage.
    assert.equal(new URL(page.url()).hash, '#/endpoints');
    assert.match((await page.evaluate("sessionStorage.getItem('hookpost.portal.key')")) ?? '', /^hpk_/);
    assert.equal(await page.locator('#tenant').textContent(), 'tenant_a');
    const rows = await page.locator('tbody tr').allTextContents();
    assert.equal(rows.length, 1);
    assert.match(rows[0]!, /orders service/);
    assert.equal(await page.getByText(endpointB).count(), 0);
    // The catalog is offered for subscription.
    for (const name of ['order.created', 'order.paid', 'invoice.sent']) {
      await page.getByRole('checkbox', { name: new RegExp(name.replace('.', '\\.')) }).waitFor();
    }
    await screenshot(page, shots, 'portal-endpoints');
    process.stdout.write(
      `# /portal first load: ${weight.requests} requests, ${weight.bytes} bytes transferred\n`,
    );
    await writeFile(path.join(shots, 'portal-weight.json'), JSON.stringify(weight, null, 2));
  });

  it('creates an endpoint subscribed to catalog types and shows its secret once', async () => {
    const form = page.getByRole('form', { name: 'New endpoint' });
    await form.getByLabel('URL').fill(receiverNew.url);
    await form.getByLabel('Description').fill('billing hooks');
    await form.getByRole('checkbox', { name: /order\.paid/ }).check();
    await form.getByLabel('Other event types').fill('invoice.*');
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    const box = page.locator('.secret-once');
    await box.waitFor();
    const secret = (await box.locator('code').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    await page.locator('tr', { hasText: 'billing hooks' }).waitFor();

    const list = await (await t.send('GET', '/v1/endpoints?tenant_id=tenant_a')).json();
    const created = list.data.find((e: { url: string }) => e.url === receiverNew.url);
    assert.ok(created, 'created through the API in tenant A');
    assert.equal(created.tenant_id, 'tenant_a');
    assert.deepEqual(created.event_types, ['order.paid', 'invoice.*']);
    await screenshot(page, shots, 'portal-secret-once');

    await box.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.locator('.secret-once').count(), 0);
    await page.reload();
    await page.locator('tr', { hasText: 'billing hooks' }).waitFor();
    assert.equal(await page.getByText(secret).count(), 0, 'the secret is not shown again');

    // The test event reaches the new endpoint, signed with that very secret.
    await page.getByRole('link', { name: created.id }).click();
    assert.equal(await page.locator('[data-samples]').getAttribute('data-samples'), '0');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.locator('.result [data-status="delivered"]').waitFor({ timeout: 30_000 });
    assert.equal(receiverNew.requests.length, 1);
    // The health refreshes after the test event: its attempt is a latency sample now.
    await page.locator('[data-samples="1"]').waitFor();
    const got = receiverNew.requests[0]!;
    const event = new Webhook(secret).verify(got.body.toString(), {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    }) as { type: string };
    assert.equal(event.type, 'hookpost.test');
    await screenshot(page, shots, 'portal-endpoint');

    // Rotation: a new secret, shown once; the old one still signs alongside.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = (await page.locator('.secret-once code').textContent()) ?? '';
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);

    // Edit and disable.
    const edit = page.getByRole('form', { name: `Edit ${created.id}` });
    await edit.getByLabel('Description').fill('billing hooks v2');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.getByText('billing hooks v2').first().waitFor();
    // Disabling asks first, in place; Cancel changes nothing.
    await page.getByRole('button', { name: `Disable ${created.id}…` }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await (await t.send('GET', `/v1/endpoints/${created.id}`)).json()).enabled, true);
    await page.getByRole('button', { name: `Disable ${created.id}…` }).click();
    await page.getByRole('button', { name: `Disable ${created.id}`, exact: true }).click();
    await page.getByRole('button', { name: `Enable ${created.id}` }).waitFor();
    const after = await (await t.send('GET', `/v1/endpoints/${created.id}`)).json();
    assert.equal(after.description, 'billing hooks v2');
    assert.equal(after.enabled, false);

    // Delete, after a confirmation step.
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: `Delete ${created.id} for good` }).click();
    await page.getByRole('heading', { name: 'Your endpoints' }).waitFor();
    assert.equal((await t.send('GET', `/v1/endpoints/${created.id}`)).status, 404);
  });

  it('shows recent deliveries with their attempts', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Deliveries', exact: true })
      .click();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    await page.locator('tr', { hasText: endpointA }).first().waitFor();
    // The key's tenant is fixed: no tenant filter, no tenant column.
    assert.equal(await page.getByLabel('Tenant').count(), 0);
    await page.getByLabel('Event type').waitFor();
    await screenshot(page, shots, 'portal-deliveries');
    await page.locator('tr', { hasText: 'order.created' }).getByRole('link').first().click();
    await page.getByRole('heading', { name: /^Attempts \(1\)$/ }).waitFor();
    await page.getByRole('button', { name: 'Replay' }).waitFor();
  });

  it("previews a resend of its endpoint's events from the endpoint page (the session key may resend)", async () => {
    await page.evaluate(`window.location.hash = '#/endpoints/${endpointA}'`);
    const form = page.locator('section', { hasText: 'Resend since' });
    const hourAgo = new Date(Date.now() - 3600_000);
    await form.getByLabel('Since').fill(localDateTime(hourAgo));
    await form.getByRole('button', { name: 'Preview (dry run)' }).click();
    const expected = await (
      await t.send('POST', `/v1/endpoints/${endpointA}/resend`, {
        since: hourAgo.toISOString(),
        dry_run: true,
      })
    ).json();
    assert.ok(expected.matched > 0, 'tenant A has events in the last hour');
    await form.getByText(new RegExp(`^${expected.matched} events? in the range`)).waitFor();
  });

  it("cannot reach tenant B's data: the API answers 404 for B's ids", async () => {
    // Run inside the page, with the page's own key (string form: the test has no DOM types).
    const answers = await page.evaluate(`(async () => {
      const ep = ${JSON.stringify(endpointB)};
      const dlv = ${JSON.stringify(deliveryB)};
      const auth = { authorization: 'Bearer ' + sessionStorage.getItem('hookpost.portal.key') };
      const out = {};
      for (const [name, method, url] of [
        ['endpoint', 'GET', '/v1/endpoints/' + ep],
        ['health', 'GET', '/v1/endpoints/' + ep + '/health'],
        ['patch', 'PATCH', '/v1/endpoints/' + ep],
        ['test', 'POST', '/v1/endpoints/' + ep + '/test-event'],
        ['delivery', 'GET', '/v1/deliveries/' + dlv],
        ['replay', 'POST', '/v1/deliveries/' + dlv + '/replay'],
      ]) {
        const res = await fetch(url, {
          method,
          headers: { ...auth, 'content-type': 'application/json' },
          body: method === 'GET' ? undefined : method === 'PATCH' ? '{"enabled":false}' : '{}',
        });
        out[name] = res.status;
      }
      const list = await (await fetch('/v1/deliveries?tenant_id=tenant_b', { headers: auth })).json();
      out.list = list.data.length;
      return out;
    })()`);
    assert.deepEqual(answers, {
      endpoint: 404,
      health: 404,
      patch: 404,
      test: 404,
      delivery: 404,
      replay: 404,
      list: 0,
    });
    // Through the page itself: B's endpoint page is an error, not B's data.
    await page.goto(`${base}/portal#/endpoints/${endpointB}`);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /404/);
    assert.equal(
      (await (await t.send('GET', `/v1/endpoints/${endpointB}`)).json()).enabled,
      true,
      'B unchanged',
    );
    assert.equal(receiverB.requests.length, 1, "nothing more was sent to B's receiver");
    // Nothing the page received named B's endpoint with a success.
    for (const [status, url] of apiCalls) {
      if (url.includes(endpointB) || url.includes(deliveryB)) assert.equal(status, 404, url);
    }
    assert.deepEqual(watched.blocked, [], 'no request left 127.0.0.1');
  });

  it('is framable by the configured origins only', async () => {
    const framed = await page.request.get(`${base}/portal`);
    assert.match(
      framed.headers()['content-security-policy'] ?? '',
      new RegExp(`frame-ancestors https://app\\.example\\.com ${parentOrigin.replace(/\./g, '\\.')}$`),
    );
    const plain = await page.request.get(`http://127.0.0.1:${servedDefault.port}/portal`);
    assert.match(plain.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'$/);
    // /ui keeps refusing every frame whatever the portal allows.
    assert.match(
      (await page.request.get(`${base}/ui`)).headers()['content-security-policy'] ?? '',
      /frame-ancestors 'none'$/,
    );

    const allowed = await watched.newPage();
    await allowed.goto(`${parentOrigin}/?src=${encodeURIComponent(sessionUrl)}`);
    const frame = allowed.frameLocator('#f');
    await frame.getByRole('heading', { name: 'Your endpoints' }).waitFor();
    await screenshot(allowed, shots, 'portal-framed');

    const refused = await watched.newPage();
    const blockedUrl = `http://127.0.0.1:${servedDefault.port}/portal`;
    await refused.goto(`${parentOrigin}/?src=${encodeURIComponent(blockedUrl)}`);
    await refused.waitForLoadState('load');
    // Chromium replaces a refused frame with its own error page: wait for that page, not a time.
    const child = await waitFor('the refused frame', () =>
      refused.frames().find((f) => f !== refused.mainFrame() && f.url().startsWith('chrome-error:')),
    );
    assert.ok(child);
    // Chromium replaces a refused frame with its own error page: the portal never runs there.
    assert.equal(await child.locator('#view').count(), 0);
    await allowed.close();
    await refused.close();
    // Chromium logs the refused frame and the 404s asked for above; nothing else went wrong.
    const others = watched.problems.filter((p) => !/frame-ancestors|Refused to frame|status of 404/.test(p));
    assert.deepEqual(others, []);
  });

  it('is usable at phone width', async () => {
    const phone = await watchedContext(browser, { width: 390, height: 844 });
    const p = await phone.newPage();
    await p.goto(sessionUrl);
    await p.locator('tr', { hasText: endpointA }).waitFor();
    const overflow = await p.evaluate('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(Number(overflow) <= 1, `no sideways scroll (${overflow} px)`);
    await screenshot(p, shots, 'portal-phone');
    await phone.context.close();
  });
  it('says the session ended once its key is revoked, and forgets the key', async () => {
    assert.equal((await t.send('DELETE', `/v1/api-keys/${sessionKeyId}`)).status, 200);
    const token = String(await page.evaluate("sessionStorage.getItem('hookpost.portal.key')"));
    await waitFor('the revoked key answers 401', async () => {
      const res = await fetch(`${base}/v1/endpoints`, { headers: { authorization: `Bearer ${token}` } });
      return res.status === 401;
    });
    await page.reload();
    await page.getByText('This portal session has expired or was revoked').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('hookpost.portal.key')"), null);
    assert.equal(await page.getByRole('navigation', { name: 'Sections' }).isVisible(), false);
  });
});
