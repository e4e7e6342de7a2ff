/**
 * /ui and /docs in real Chromium against a real server, dispatcher and local receivers: sign in,
 * the pipeline shows what the API shows, a dead letter is listed and its one-click replay reaches
 * the receiver, a bulk replay previews its count, a delivery's page lists every attempt, all with
 * every outside request blocked (/docs: docs-page.test.ts). Screenshots go under a temp dir
 * (and to HOOKPOST_SCREENSHOTS_DIR when set, for the README); page weights are printed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import { BUCKET_COUNT, bucketIndex } from '../../src/endpoints/latency.js';
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

describe('admin page in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let served: ServedApp;
  let base: string;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let shots: string;
  const receivers: Receiver[] = [];
  const down = { doomed: true, bulk: true };
  let flakyCalls = 0;
  let doomedEndpoint: string;
  let bulkEndpoint: string;
  let flakyEndpoint: string;
  let doomedDelivery: string;
  let flakyDelivery: string;

  async function endpoint(receiver: Receiver, description: string): Promise<string> {
    receivers.push(receiver);
    const res = await t.send('POST', '/v1/endpoints', { url: receiver.url, description });
    return (await res.json()).id;
  }
  async function enqueue(endpointId: string, payload: unknown): Promise<string> {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'order.paid',
      payload,
    });
    assert.equal(res.status, 202);
    return (await res.json()).deliveries[0].id;
  }
  const statusOf = async (id: string) => (await (await t.send('GET', `/v1/deliveries/${id}`)).json()).status;
  const settled = (id: string, status: string) =>
    waitFor(`${id} ${status}`, async () => (await statusOf(id)) === status, 30_000);

  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name }).click();

  /** Every visible form control has a label, and every button a name. */
  async function assertLabelled(target = page) {
    const unlabelled = await target.evaluate<
      string[]
    >(`[...document.querySelectorAll('input, select, button')]
      .filter((el) => el.offsetParent !== null)
      .filter((el) => el.tagName === 'BUTTON' ? !(el.getAttribute('aria-label') || el.textContent.trim()) : el.labels.length === 0)
      .map((el) => el.outerHTML)`);
    assert.deepEqual(unlabelled, [], 'controls without a label');
  }

  const shot = (name: string, target = page) => screenshot(target, shots, name);

  /**
   * 24 h of per-minute histograms (one row every 10 minutes, in the table the dispatchers fill):
   * p50 near 40 ms and a slow spell in the middle, so the chart has something to show.
   */
  async function seedLatency(endpointId: string) {
    for (let minutesAgo = 24 * 60 - 10; minutesAgo >= 30; minutesAgo -= 10) {
      const buckets = new Array(BUCKET_COUNT).fill(0);
      const slow = minutesAgo > 600 && minutesAgo < 800;
      buckets[bucketIndex(slow ? 400 : 40)] = 80;
      buckets[bucketIndex(slow ? 1500 : 120)] = 15;
      buckets[bucketIndex(slow ? 4000 : 300)] = 5;
      await db.sql`
        INSERT INTO endpoint_latency_minutes (endpoint_id, minute, buckets)
        VALUES (${endpointId}, date_trunc('minute', now()) - make_interval(mins => ${minutesAgo}), ${buckets})`;
    }
  }

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-ui-'));
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '3',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
    served = await serveApp(t.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${served.port}`;

    doomedEndpoint = await endpoint(
      await startReceiver((_req, res) =>
        res.writeHead(down.doomed ? 503 : 200).end(down.doomed ? 'maintenance' : 'ok'),
      ),
      'orders service',
    );
    bulkEndpoint = await endpoint(
      await startReceiver((_req, res) => res.writeHead(down.bulk ? 500 : 200).end()),
      'billing',
    );
    flakyEndpoint = await endpoint(
      await startReceiver((_req, res) => {
        flakyCalls += 1;
        if (flakyCalls <= 2) res.writeHead(500).end('busy, try later');
        else res.writeHead(200).end('thanks');
      }),
      'crm',
    );
    doomedDelivery = await enqueue(doomedEndpoint, { order: 1 });
    flakyDelivery = await enqueue(flakyEndpoint, { order: 2 });
    const bulk = [];
    for (let n = 0; n < 3; n++) bulk.push(await enqueue(bulkEndpoint, { invoice: n }));
    await settled(doomedDelivery, 'dead_letter');
    await settled(flakyDelivery, 'delivered');
    for (const id of bulk) await settled(id, 'dead_letter');

    await seedLatency(bulkEndpoint);

    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db?.drop();
    // Full-page shots are for a look while debugging; HOOKPOST_SCREENSHOTS_DIR keeps the README's.
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it('signs in with a key and shows the pipeline figures the API shows', async () => {
    const weight = await measureTransfer(page, async () => {
      await page.goto(`${base}/ui`);
      await page.getByLabel('API key').waitFor();
    });
    await shot('ui-sign-in');
    await page.getByLabel('API key').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('That key was refused (401).').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('hookpost.admin.key')"), null);
    assert.equal(await page.getByRole('navigation', { name: 'Sections' }).isVisible(), false);
    // Chromium logs the refused request itself; that one console line is expected.
    const refused = watched.problems.findIndex((p) => /status of 401/.test(p));
    assert.ok(refused >= 0);
    watched.problems.splice(refused, 1);
    const signedIn = await measureTransfer(page, async () => {
      await page.getByLabel('API key').fill(TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('[data-metric="dead_letter"][data-value]').waitFor();
      await page.waitForLoadState('networkidle');
    });
    assert.equal(await page.evaluate("sessionStorage.getItem('hookpost.admin.key')"), TOKEN);

    const api = await (await t.send('GET', '/v1/pipeline')).json();
    for (const [key, value] of Object.entries(api)) {
      const shown = await page.locator(`[data-metric="${key}"]`).getAttribute('data-value');
      assert.equal(shown, String(value ?? ''), `${key} on the page`);
    }
    assert.equal(api.dead_letter, 4);
    assert.equal(await page.locator('[data-metric="dead_letter"]').textContent(), '4');
    await shot('ui-pipeline');
    process.stdout.write(
      `# /ui first load: ${weight.requests} requests, ${weight.bytes} bytes transferred; ` +
        `signing in and the first pipeline view: ${signedIn.requests} requests, ${signedIn.bytes} bytes\n`,
    );
    await writeFile(path.join(shots, 'ui-weight.json'), JSON.stringify({ weight, signedIn }, null, 2));
  });

  it('lists endpoints with their health and disables and enables one', async () => {
    await nav('Endpoints');
    const row = page.locator('tr', { hasText: flakyEndpoint });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /closed/);
    await shot('ui-endpoints');
    // Disabling asks first, in place, saying what it does.
    await page.getByRole('button', { name: `Disable ${flakyEndpoint}…` }).click();
    await row.getByText('its deliveries wait').waitFor();
    await page.getByRole('button', { name: `Disable ${flakyEndpoint}`, exact: true }).click();
    await page.getByRole('button', { name: `Enable ${flakyEndpoint}` }).waitFor();
    assert.equal((await (await t.send('GET', `/v1/endpoints/${flakyEndpoint}`)).json()).enabled, false);
    await page.getByRole('button', { name: `Enable ${flakyEndpoint}` }).click();
    await page.getByRole('button', { name: `Disable ${flakyEndpoint}…` }).waitFor();
    assert.equal((await (await t.send('GET', `/v1/endpoints/${flakyEndpoint}`)).json()).enabled, true);

    // The tenant filter (GET /v1/endpoints?tenant_id=): another tenant has none of these.
    const search = page.getByRole('search');
    await search.getByLabel('Tenant').fill('someone_else');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No endpoints yet.').waitFor();
    await search.getByLabel('Tenant').fill('default');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('tr', { hasText: bulkEndpoint }).waitFor();
    assert.match(page.url(), /#\/endpoints\?tenant_id=default$/);

    await page.getByRole('link', { name: bulkEndpoint }).click();
    await page.locator('.chart canvas').first().waitFor();
    const series = await (await t.send('GET', `/v1/endpoints/${bulkEndpoint}/latency?hours=24`)).json();
    assert.ok(series.points.length > 80, `${series.points.length} points`);
    assert.equal(
      await page.locator('.chart details tbody tr').count(),
      series.points.length,
      'one chart point per step',
    );
    await shot('ui-endpoint');
  });

  it('shows a dead letter with its analysis, and one click replays it to the receiver', async () => {
    await nav('Dead letters');
    const row = page.locator('tr', { hasText: doomedDelivery });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /dead letter/);
    const analysis = page.locator('tr', { hasText: doomedEndpoint }).first();
    assert.match((await analysis.textContent()) ?? '', /503/);
    await assertLabelled();
    await shot('ui-dead-letters');

    down.doomed = false;
    const doomedReceiver = receivers[0]!;
    const before = doomedReceiver.requests.length;
    const analysisSection = page.locator('section', { hasText: 'Analysis, last 24 hours' });
    const listSection = page.locator('section', { hasText: 'Newest dead letters' });
    await analysisSection.locator('tr', { hasText: doomedEndpoint }).waitFor();
    await page.getByRole('button', { name: `Replay ${doomedDelivery}` }).click();
    await row.getByText('Replayed').waitFor();
    // The views refresh: the analysis stops counting it once queued; the list drops it once it
    // is delivered (its status shows in the row until then).
    await analysisSection.locator('tr', { hasText: doomedEndpoint }).waitFor({ state: 'detached' });
    await listSection
      .locator('tr', { hasText: doomedDelivery })
      .waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(await statusOf(doomedDelivery), 'delivered');
    assert.equal(doomedReceiver.requests.length, before + 1, 'the replay reached the receiver once');
    assert.equal(
      doomedReceiver.requests.at(-1)!.headers['webhook-id'],
      doomedReceiver.requests[0]!.headers['webhook-id'],
    );
  });

  it('previews a bulk replay with a dry run, then replays the matches', async () => {
    await page.getByLabel('Endpoint id').fill(bulkEndpoint);
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    const result = page.locator('.result[data-matched]');
    await result.waitFor();
    assert.equal(await result.getAttribute('data-matched'), '3');
    assert.match((await result.textContent()) ?? '', /3 dead letters match/);
    for (const id of (await (await t.send('GET', `/v1/deliveries?endpoint_id=${bulkEndpoint}`)).json())
      .data) {
      assert.equal(id.status, 'dead_letter', 'a dry run changes nothing');
    }
    const listSection = page.locator('section', { hasText: 'Newest dead letters' });
    const analysisSection = page.locator('section', { hasText: 'Analysis, last 24 hours' });
    assert.equal(await listSection.locator('tr', { hasText: bulkEndpoint }).count(), 3);
    await analysisSection.locator('tr', { hasText: bulkEndpoint }).waitFor();
    down.bulk = false;
    await page.getByRole('button', { name: 'Replay matching' }).click();
    await page.getByText(/Replay finished: 3 of 3 queued/).waitFor({ timeout: 30_000 });
    // Refreshed after the replay: no replayed row is offered as a dead letter, the analysis
    // stops counting them, and the replay needs a fresh preview before it runs again.
    await listSection.locator('tr', { hasText: bulkEndpoint }).first().waitFor({ state: 'detached' });
    assert.equal(await listSection.getByRole('button', { name: /^Replay dlv_/ }).count(), 0);
    await analysisSection.locator('tr', { hasText: bulkEndpoint }).waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('button', { name: 'Replay matching' }).isDisabled(), true);
    const list = (await (await t.send('GET', `/v1/deliveries?endpoint_id=${bulkEndpoint}`)).json()).data;
    for (const d of list) await settled(d.id, 'delivered');
  });

  it("resends an endpoint's delivered events from its page, with their original webhook-ids", async () => {
    const receiver = receivers[1]!; // the bulk endpoint's, whose three deliveries are delivered now
    const before = receiver.requests.length;
    const ids = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    await page.evaluate(`window.location.hash = '#/endpoints/${bulkEndpoint}'`);
    const form = page.locator('section', { hasText: 'Resend since' });
    await form.getByLabel('Since').fill(localDateTime(new Date(Date.now() - 3600_000))); // an hour ago
    await form.getByLabel('Reason').fill('receiver lost its database');
    await form.getByRole('button', { name: 'Preview (dry run)' }).click();
    await form.getByText('3 events in the range.').waitFor();
    assert.equal(receiver.requests.length, before, 'a dry run sends nothing');
    await form.getByRole('button', { name: 'Resend', exact: true }).click();
    await form.getByText(/Resend finished: 3 of 3 queued/).waitFor({ timeout: 30_000 });
    await waitFor('the three resent', () => receiver.requests.length === before + 3);
    const again = receiver.requests.slice(before).map((r) => r.headers['webhook-id']);
    assert.deepEqual(new Set(again), ids, 'the same webhook-ids, each once');
    const [audit] = await db.sql<{ reason: string | null }[]>`
      SELECT filter->>'reason' AS reason FROM replay_audit ORDER BY created_at DESC LIMIT 1`;
    assert.equal(audit?.reason, 'receiver lost its database', 'the reason is audited');
  });

  it('finds a delivery and lists every attempt of one that failed twice, then succeeded', async () => {
    await nav('Deliveries');
    await page.getByLabel('Endpoint id').fill(flakyEndpoint);
    await page.getByLabel('Status').selectOption('delivered');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/status=delivered/);
    const hit = page.getByRole('link', { name: flakyDelivery });
    await hit.waitFor();
    await assertLabelled();
    // The filters /openapi.json declares for the list, with a Tenant column in the results.
    await page.getByLabel('Created since').waitFor();
    await page.getByRole('columnheader', { name: 'Tenant' }).waitFor();
    await page.getByLabel('Tenant').fill('default');
    await page.getByLabel('Event type').fill('order.paid');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/tenant_id=default/);
    await hit.waitFor();
    await page.getByLabel('Event type').fill('order.refunded');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No delivery matches.').waitFor();
    await page.getByLabel('Event type').fill('order.paid');
    await page.getByRole('button', { name: 'Search' }).click();
    await hit.waitFor();
    // By message id (the webhook-id a partner quotes): another message's finds nothing.
    await page.getByLabel('Message id').fill('msg_nope');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No delivery matches.').waitFor();
    await page.getByLabel('Message id').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await hit.waitFor();
    await shot('ui-deliveries');
    await hit.click();
    const attempts = page.locator('section', { hasText: 'Attempts (3)' }).locator('tbody tr');
    await attempts.first().waitFor();
    assert.equal(await attempts.count(), 3);
    const cells = async (i: number) =>
      (await attempts.nth(i).locator('td').allTextContents()).map((s) => s.trim());
    const rows = [await cells(0), await cells(1), await cells(2)];
    assert.deepEqual(
      rows.map((r) => [r[0], r[3]]),
      [
        ['1', '500'],
        ['2', '500'],
        ['3', '200'],
      ],
    );
    assert.match(rows[0]!.join(' '), /busy, try later/, 'the response snippet is shown');
    assert.match(rows[0]!.join(' '), /\d+ ms/, 'the duration is shown');
    await shot('ui-delivery');
  });

  it('works with the keyboard alone', async () => {
    const keys = await watchedContext(browser);
    const kb = await keys.newPage();
    await kb.goto(`${base}/ui`);
    await kb.locator('#key:focus').waitFor();
    await kb.keyboard.type(TOKEN);
    await kb.keyboard.press('Enter');
    await kb.locator('[data-metric="pending"][data-value]').waitFor();
    // Tab from the top of the page to the Dead letters link, follow it, then Tab to a Replay button.
    const focused = () => kb.evaluate<string>("document.activeElement?.textContent?.trim() ?? ''");
    let steps = 0;
    while ((await focused()) !== 'Dead letters' && steps++ < 20) await kb.keyboard.press('Tab');
    await kb.keyboard.press('Enter');
    await kb.getByRole('heading', { name: 'Dead letters', level: 1 }).waitFor();
    // The heading shows before the view's data; focus moves to it once the view is loaded.
    const onHeading = async () => (await kb.evaluate<string>('document.activeElement.tagName')) === 'H1';
    await waitFor('focus on the heading', onHeading, 5000);
    assert.equal(
      await kb.evaluate<string>('document.activeElement.tagName'),
      'H1',
      'focus moves to the new view',
    );
    steps = 0;
    while ((await focused()) !== 'Preview (dry run)' && steps++ < 80) await kb.keyboard.press('Tab');
    assert.equal(await focused(), 'Preview (dry run)', 'the bulk replay is reachable by Tab');
    assert.deepEqual(keys.blocked, []);
    assert.deepEqual(keys.problems, []);
    await keys.context.close();
  });

  it('is readable at phone width', async () => {
    const phone = await watchedContext(browser, { width: 390, height: 844 });
    const small = await phone.newPage();
    await small.goto(`${base}/ui`);
    await small.getByLabel('API key').fill(TOKEN);
    await small.getByLabel('API key').press('Enter');
    await small.locator('[data-metric="pending"][data-value]').waitFor();
    const sideways = () => small.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok((await sideways()) <= 0, `the pipeline scrolls sideways by ${await sideways()}px at 390px`);
    await shot('ui-phone-pipeline', small);
    await small.goto(`${base}/ui#/deliveries/${flakyDelivery}`);
    await small.locator('section', { hasText: 'Attempts (3)' }).locator('tbody tr').first().waitFor();
    assert.ok(
      (await sideways()) <= 0,
      `the delivery page scrolls sideways by ${await sideways()}px at 390px`,
    );
    await shot('ui-phone-delivery', small);
    await small.goto(`${base}/ui#/dead-letters`);
    await small.getByRole('heading', { name: 'Bulk replay' }).waitFor();
    assert.ok((await sideways()) <= 0, `the dead letters scroll sideways by ${await sideways()}px at 390px`);
    assert.deepEqual(phone.blocked, []);
    assert.deepEqual(phone.problems, []);
    await phone.context.close();
  });

  it('made no outside request and hit no CSP violation on /ui', () => {
    assert.deepEqual(watched.blocked, []);
    assert.deepEqual(watched.problems, []);
  });
});
