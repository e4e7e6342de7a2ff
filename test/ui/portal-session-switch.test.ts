/**
 * /portal in real Chromium when a session link arrives in a tab that is already signed in: a
 * link is a login anyone can send (perhaps carrying the sender's own session), so the portal asks
 * before it switches, naming the link's tenant and the current one, and keeps acting as the
 * current session until the partner presses Switch — on page load and on a hashchange alike.
 * A link with no session signed in signs in as before and says which tenant it is; the same
 * session again, or a link that no longer works, asks nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, type Watched, watchedContext } from './browser.js';

const skip = skipUnlessInstalled(['chromium'], 'apt-get install -y chromium');
const KEY = "sessionStorage.getItem('hookpost.portal.key')";

describe('partner portal: a session link while signed in', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let served: ServedApp;
  let base: string;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let endpointA: string;
  let tokenA: string;
  let tokenB: string;

  async function session(tenant: string): Promise<{ id: string; token: string }> {
    const res = await t.send('POST', `/v1/tenants/${tenant}/portal-sessions`, { expires_in_seconds: 900 });
    assert.equal(res.status, 201);
    return res.json();
  }
  const link = (token: string) => `${base}/portal#token=${encodeURIComponent(token)}`;
  const prompt = () => page.getByRole('alertdialog', { name: 'Switch to another portal session?' });

  /** The page acts as tenant A: A's key stored, A named, A's endpoint listed, no token in the URL. */
  async function actsAsA() {
    assert.equal(await page.evaluate(KEY), tokenA);
    assert.equal(await page.locator('#tenant').textContent(), 'tenant_a');
    assert.doesNotMatch(page.url(), /token/);
    await page.evaluate("location.hash = '#/endpoints'");
    await page.locator('tr', { hasText: endpointA }).waitFor();
  }

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    served = await serveApp(t.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${served.port}`;
    // Tenant A has an endpoint; tenant B (the link's sender, say) has none.
    const a = await t.send('POST', '/v1/endpoints', { tenant_id: 'tenant_a', url: 'http://127.0.0.1:9/a' });
    assert.equal(a.status, 201);
    endpointA = (await a.json()).id;
    assert.equal((await t.send('PUT', '/v1/tenants/tenant_b', {})).status, 201);
    tokenA = (await session('tenant_a')).token;
    tokenB = (await session('tenant_b')).token;
    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await db?.drop();
  });

  it('signs in from a link when no session is stored, and names the tenant', async () => {
    await page.goto(link(tokenA));
    await page.locator('tr', { hasText: endpointA }).waitFor();
    assert.equal(await page.evaluate(KEY), tokenA);
    assert.equal(new URL(page.url()).hash, '#/endpoints');
    await page.locator('#tenant', { hasText: 'tenant_a' }).waitFor();

    // A tenant with no endpoints is named too (nothing in its views says which it is).
    const other = await watched.newPage();
    await other.goto(link(tokenB));
    await other.getByRole('heading', { name: 'Your endpoints' }).waitFor();
    await other.locator('#tenant', { hasText: 'tenant_b' }).waitFor();
    assert.equal(await other.getByRole('alertdialog').count(), 0);
    await other.close();
  });

  it("asks before switching to another tenant's link opened in a new load; Stay keeps the session", async () => {
    await page.goto('about:blank');
    await page.goto(link(tokenB));
    const dialog = prompt();
    await dialog.waitFor();
    const text = (await dialog.textContent()) ?? '';
    assert.match(text, /signs in to the portal of tenant_b/);
    assert.match(text, /signed in as tenant_a/);
    // While it asks, the page is still A's, and the token is out of the address bar.
    assert.equal(new URL(page.url()).hash, '#/endpoints');
    assert.equal(await page.evaluate(KEY), tokenA);
    await page.locator('tr', { hasText: endpointA }).waitFor();
    // The safe answer has the focus.
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Stay in tenant_a');

    await dialog.getByRole('button', { name: 'Stay in tenant_a' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByText('Still signed in as tenant_a.').waitFor();
    await actsAsA();
  });

  it('asks on a hashchange in an open tab, puts back the view, and Switch moves to the link’s tenant', async () => {
    await page.evaluate("location.hash = '#/deliveries'");
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    await page.evaluate(`location.hash = ${JSON.stringify(`#token=${encodeURIComponent(tokenB)}`)}`);
    const dialog = prompt();
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? '', /portal of tenant_b\. You are signed in as tenant_a/);
    // The view the partner was on is back, still A's.
    assert.equal(new URL(page.url()).hash, '#/deliveries');
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    assert.equal(await page.evaluate(KEY), tokenA);

    // Escape is Stay.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await actsAsA();

    // The view put back behind the prompt renders with A's session; hold its list of endpoints
    // until after Switch, as a slow answer would: the late answer (A's endpoint) must draw nothing
    // and lead to no further request (its health, asked with B's session, would be a 404 drawn
    // over B's page as "Something went wrong").
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = 0;
    const endpointList = (url: URL) => url.pathname === '/v1/endpoints';
    await page.route(endpointList, async (r) => {
      if (r.request().headers().authorization === `Bearer ${tokenA}`) {
        held += 1;
        await released;
      }
      await r.continue();
    });
    await page.evaluate(`location.hash = ${JSON.stringify(`#token=${encodeURIComponent(tokenB)}`)}`);
    await prompt().getByRole('button', { name: 'Switch to tenant_b' }).click();
    await prompt().waitFor({ state: 'detached' });
    await page.getByText('Signed in as tenant_b.').waitFor();
    assert.equal(await page.evaluate(KEY), tokenB);
    assert.equal(new URL(page.url()).hash, '#/endpoints');
    assert.equal(await page.locator('#tenant').textContent(), 'tenant_b');
    await page.getByText('No endpoints yet: create one below.').waitFor();
    assert.equal(held, 1);
    // A's list now answers; on the old pages its endpoint's health was asked at once (with B's
    // session), so a second without that request means none was made.
    const late = page.waitForResponse(
      (r) => endpointList(new URL(r.url())) && r.request().headers().authorization === `Bearer ${tokenA}`,
    );
    const healthOfA = page
      .waitForRequest((r) => new URL(r.url()).pathname === `/v1/endpoints/${endpointA}/health`, {
        timeout: 1000,
      })
      .then(
        () => true,
        () => false,
      );
    release();
    await late;
    assert.equal(await healthOfA, false, "the view left behind asked for A's endpoint's health");
    await page.unroute(endpointList);
    // And it stays so: no answer for tenant A's session (a view's request sent before the switch)
    // puts A's name or A's endpoints back.
    assert.equal(await page.locator('#tenant').textContent(), 'tenant_b');
    assert.equal(await page.locator('tr', { hasText: endpointA }).count(), 0);
    await page.getByText('No endpoints yet: create one below.').waitFor();
  });

  it('asks nothing for the session already signed in, and stays put for a link that no longer works', async () => {
    const whoami = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/whoami');
    await page.goto('about:blank');
    await page.goto(link(tokenB));
    await whoami;
    await page.locator('#tenant', { hasText: 'tenant_b' }).waitFor();
    assert.equal(await prompt().count(), 0);
    assert.equal(new URL(page.url()).hash, '#/endpoints');

    const revoked = await session('tenant_a');
    assert.equal((await t.send('DELETE', `/v1/api-keys/${revoked.id}`)).status, 200);
    await page.evaluate(`location.hash = ${JSON.stringify(`#token=${encodeURIComponent(revoked.token)}`)}`);
    await page.getByText('The link you opened has expired or was revoked').waitFor();
    assert.equal(await prompt().count(), 0);
    assert.equal(await page.evaluate(KEY), tokenB);
    assert.doesNotMatch(page.url(), /token/);
    const others = watched.problems.filter((p) => !/status of 401/.test(p));
    assert.deepEqual(others, []);
    assert.deepEqual(watched.blocked, []);
  });
});
