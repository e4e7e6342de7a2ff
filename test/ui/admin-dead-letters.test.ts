/**
 * The dead-letter analysis on /ui in real Chromium, from sign-in, over dead letters real
 * dispatchers produced: one endpoint hookpost itself refused to reach (a loopback address with
 * HOOKPOST_ALLOW_PRIVATE_TARGETS off in the dispatcher: the quick start's trap), one whose port
 * refuses every connection. The first is named as hookpost's own setting, with the variable to
 * change; the second follows its error class instead of reading `mixed`; both rows show the
 * endpoint's URL (origin and path: the token in its query string is not shown) and description.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  TOKEN,
  waitFor,
} from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, screenshot, signInToAdmin, type Watched, watchedContext } from './browser.js';

const skip = skipUnlessInstalled(['chromium'], 'apt-get install -y chromium');

describe('dead-letter analysis on /ui in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let served: ServedApp;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let shots: string;
  let receiver: Receiver;
  let blocked: string;
  let refused: string;

  const deadCount = async (endpointId: string) =>
    (
      await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${endpointId} AND status = 'dead_letter'`
    )[0]!.n;

  /** `count` deliveries to `endpointId` through a dispatcher with `env`, until all are dead letters. */
  async function deadLetters(endpointId: string, count: number, env: Record<string, string>) {
    const dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '2',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
      HOOKPOST_POLL_INTERVAL_MS: '50',
      ...env,
    });
    try {
      await enqueueMany(t.send, endpointId, count);
      await waitFor(`${count} dead letters`, async () => (await deadCount(endpointId)) === count, 30_000);
    } finally {
      await dispatcher.stop();
    }
  }

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-ui-dead-letters-'));
    db = await createTestDatabase();
    // The API accepts loopback targets (as a test or a local setup would); the dispatcher may not.
    t = await createTestApp(db);
    served = await serveApp(t.app, 0, '127.0.0.1');
    receiver = await startReceiver();
    blocked = (await createEndpoint(t, `${receiver.url}?token=t0ps3cret`, { description: 'billing, local' }))
      .id;
    await deadLetters(blocked, 3, { HOOKPOST_ALLOW_PRIVATE_TARGETS: 'false' });
    const closed = await startReceiver();
    await closed.close();
    refused = (await createEndpoint(t, closed.url, { description: 'crm' })).id;
    await deadLetters(refused, 2, {});

    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
    await signInToAdmin(page, served.port, TOKEN);
    await page.locator('[data-metric="dead_letter"][data-value="5"]').waitFor();
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await receiver?.close();
    await db?.drop();
    // Full-page shots are for a look while debugging; HOOKPOST_SCREENSHOTS_DIR keeps the README's.
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it('names the setting when hookpost caused the dead letters, and the class when one dominates', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Dead letters' })
      .click();
    const analysis = page.locator('section', { hasText: 'Analysis, last 24 hours' });
    const ours = analysis.locator('tr', { hasText: blocked });
    await ours.waitFor();
    const oursText = (await ours.textContent()) ?? '';
    assert.match(oursText, /hookpost config/);
    assert.match(oursText, /HOOKPOST_ALLOW_PRIVATE_TARGETS=true/);
    assert.match(oursText, /private_address_blocked/);
    assert.doesNotMatch(oursText, /partner's server/);

    const theirs = (await analysis.locator('tr', { hasText: refused }).textContent()) ?? '';
    assert.match(theirs, /unreachable/);
    assert.doesNotMatch(theirs, /mixed/);
    assert.match(theirs, /Mostly connection_refused \(100%\)/);
    await screenshot(page, shots, 'ui-dead-letter-analysis');
  });

  it("shows each endpoint's URL (origin and path) and description beside its id", async () => {
    const row = page
      .locator('section', { hasText: 'Analysis, last 24 hours' })
      .locator('tr', { hasText: blocked });
    const text = (await row.textContent()) ?? '';
    assert.ok(text.includes(receiver.url), text);
    assert.match(text, /billing, local/);
    assert.equal(await page.getByText('t0ps3cret').count(), 0, 'the query string is left out');
    // The pipeline's summary shows them too.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Pipeline' }).click();
    const summary = page
      .locator('section', { hasText: 'Dead letters by endpoint' })
      .locator('tr', { hasText: refused });
    await summary.waitFor();
    assert.match((await summary.textContent()) ?? '', /crm/);
  });

  it('made no outside request and hit no CSP violation', () => {
    assert.deepEqual(watched.blocked, []);
    assert.deepEqual(watched.problems, []);
  });
});
