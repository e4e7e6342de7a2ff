/**
 * Endpoint management on /ui in real Chromium, from sign-in, for a tenant other than `default`:
 * create (event types from the catalog, a header, a retry policy) with the secret shown once,
 * edit (URL, types, headers, retry policy) sending only what changed, a signed test event after
 * which the health shows its sample, rotation, disable and delete each after a confirmation.
 * Every action reports inside its own form or section: the page-wide toast stays empty, so it
 * never covers the form it would report on.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
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
} from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, screenshot, signInToAdmin, type Watched, watchedContext } from './browser.js';

const skip = skipUnlessInstalled(['chromium'], 'apt-get install -y chromium');

describe('endpoint management on /ui in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let served: ServedApp;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let shots: string;
  let first: Receiver;
  let second: Receiver;
  let id: string;
  let secret: string;

  const get = async (path: string) => (await t.send('GET', path)).json();
  const shot = (name: string) => screenshot(page, shots, name);

  /** The toast is empty (the message went into the form) and, were it shown, clear of `form`. */
  async function reportedInside(form: Locator, text: RegExp) {
    await form.locator('.inline-notice', { hasText: text }).waitFor();
    assert.equal((await page.locator('#notice').textContent()) ?? '', '', 'nothing in the page-wide toast');
    const [toast, box] = [await page.locator('#notice').boundingBox(), await form.boundingBox()];
    const overlaps =
      toast && box && toast.width > 0 && toast.height > 0
        ? toast.x < box.x + box.width && box.x < toast.x + toast.width && toast.y < box.y + box.height
        : false;
    assert.equal(overlaps, false, 'the toast does not cover the form');
  }

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-ui-endpoints-'));
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    served = await serveApp(t.app, 0, '127.0.0.1');
    first = await startReceiver();
    second = await startReceiver();
    for (const name of ['order.created', 'order.paid']) {
      assert.equal(
        (await t.send('PUT', `/v1/event-types/${name}`, { description: `An ${name}` })).status,
        201,
      );
    }
    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
    await signInToAdmin(page, served.port, TOKEN, '#/endpoints');
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await dispatcher?.stop();
    await Promise.all([first, second].map((r) => r?.close()));
    await db?.drop();
    // Full-page shots are for a look while debugging; HOOKPOST_SCREENSHOTS_DIR keeps the README's.
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it('creates an endpoint for a tenant, with a header and a retry policy, and shows its secret once', async () => {
    const form = page.getByRole('form', { name: 'New endpoint' });
    await form.getByLabel('Tenant').fill('acme');
    await form.getByLabel('URL').fill(first.url);
    await form.getByLabel('Description').fill('acme orders');
    await form.getByRole('checkbox', { name: /order\.paid/ }).check();
    await form.locator('summary', { hasText: 'Headers' }).click();
    await form.getByRole('button', { name: 'Add header' }).click();
    await form.getByLabel('Header 1 name').fill('X-Api-Key');
    await form.getByLabel('Header 1 value').fill('key-of-acme-123456');
    await form.locator('summary', { hasText: 'Retry policy' }).click();
    await form.getByLabel('Attempts before dead letter').fill('3');
    await form.evaluate((el) => el.scrollIntoView());
    await shot('ui-endpoint-create');
    await form.getByRole('button', { name: 'Create endpoint' }).click();

    secret = (await page.locator('.secret-once code').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    const row = page.locator('tr', { hasText: 'acme orders' });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /acme/);
    await reportedInside(page.getByRole('form', { name: 'New endpoint' }), /created/);

    const list = await get('/v1/endpoints?tenant_id=acme');
    assert.equal(list.data.length, 1);
    const created = list.data[0];
    id = created.id;
    assert.equal(created.url, first.url);
    assert.deepEqual(created.event_types, ['order.paid']);
    assert.equal(created.max_attempts, 3);
    assert.deepEqual(Object.keys(created.headers), ['X-Api-Key']);
    assert.equal(created.retry_base_seconds, null, 'an empty field keeps the default');
    await page.getByRole('button', { name: 'I have copied it' }).click();
  });

  it('edits URL, event types, headers and retry policy, sending only what changed', async () => {
    await page.getByRole('link', { name: id }).click();
    const form = page.getByRole('form', { name: `Edit ${id}` });
    await form.waitFor();
    // Sections that hold something other than the defaults are open on edit.
    assert.equal(
      await form.getByLabel('Header 1 value').inputValue(),
      '••••••3456',
      'the stored value, masked',
    );
    await form.getByLabel('URL').fill(second.url);
    // Another port is another origin: the stored header value would be dropped, and it says so.
    await form.getByText('Another host: its stored header values').waitFor();
    await form.getByRole('checkbox', { name: /order\.created/ }).check();
    await form.getByRole('button', { name: 'Remove header 1' }).click();
    await form.getByRole('button', { name: 'Add header' }).click();
    await form.getByLabel('Header 2 name').fill('X-Tenant');
    await form.getByLabel('Header 2 value').fill('acme');
    await form.getByLabel('Retry base (seconds)').fill('0.5');
    await form.evaluate((el) => el.scrollIntoView());
    await shot('ui-endpoint-edit');
    await form.getByRole('button', { name: 'Save' }).click();
    await reportedInside(page.getByRole('form', { name: `Edit ${id}` }), /saved/);

    const e = await get(`/v1/endpoints/${id}`);
    assert.equal(e.url, second.url);
    assert.deepEqual(e.event_types, ['order.created', 'order.paid']);
    assert.deepEqual(Object.keys(e.headers), ['X-Tenant']);
    assert.equal(e.retry_base_seconds, 0.5);
    assert.equal(e.max_attempts, 3, 'untouched');
    const audit = (await get('/v1/audit-log?limit=5')).data.find(
      (a: { action: string }) => a.action === 'endpoint.updated',
    );
    assert.deepEqual(
      [...audit.details.fields].sort(),
      ['event_types', 'headers', 'retry_base_seconds', 'url'],
      'the PATCH named only the changed fields',
    );
    // Saving again without a change sends nothing.
    await page
      .getByRole('form', { name: `Edit ${id}` })
      .getByRole('button', { name: 'Save' })
      .click();
    await reportedInside(page.getByRole('form', { name: `Edit ${id}` }), /Nothing changed/);
  });

  it('sends a signed test event, then shows its sample in the health', async () => {
    await page.locator('[data-samples="0"]').waitFor();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.locator('.result [data-status="delivered"]').waitFor({ timeout: 30_000 });
    const got = second.requests.at(-1)!;
    assert.equal(got.headers['x-tenant'], 'acme', 'the edited headers are sent');
    const event = new Webhook(secret).verify(got.body.toString(), {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    }) as { type: string };
    assert.equal(event.type, 'hookpost.test');
    await page.locator('[data-samples="1"]').waitFor();
    assert.equal(first.requests.length, 0, 'nothing went to the old URL');
  });

  it('rotates the secret, showing the new one once', async () => {
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = (await page.locator('.secret-once code').textContent()) ?? '';
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await reportedInside(
      page.locator('section', { has: page.getByRole('button', { name: 'Rotate secret' }) }),
      /old secret keeps signing/,
    );
  });

  it('disables and deletes only after a confirmation', async () => {
    await page.getByRole('button', { name: `Disable ${id}…` }).click();
    await page.getByText('its deliveries wait').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await get(`/v1/endpoints/${id}`)).enabled, true, 'Cancel changed nothing');
    await page.getByRole('button', { name: `Disable ${id}…` }).click();
    await page.getByRole('button', { name: `Disable ${id}`, exact: true }).click();
    await page.getByRole('button', { name: `Enable ${id}` }).waitFor();
    assert.equal((await get(`/v1/endpoints/${id}`)).enabled, false);

    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByText('This cannot be undone.').waitFor();
    assert.equal((await t.send('GET', `/v1/endpoints/${id}`)).status, 200, 'not yet');
    await page.getByRole('button', { name: `Delete ${id} for good` }).click();
    await page.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
    assert.equal((await t.send('GET', `/v1/endpoints/${id}`)).status, 404);
    await page.getByText('No endpoints yet.').waitFor();
  });

  it('made no outside request and hit no CSP violation', () => {
    assert.deepEqual(watched.blocked, []);
    assert.deepEqual(watched.problems, []);
  });
});
