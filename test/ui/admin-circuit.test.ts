/**
 * An open circuit on /ui in real Chromium, from sign-in, made by a real dispatcher: a receiver
 * fails until the endpoint's circuit opens. The delivery page says it waits for the circuit and
 * until when, and offers no Replay (it would only park again); the receiver heals; Retry now on
 * the endpoint's page closes the circuit (audited) and the delivery ends delivered. A bulk replay
 * of dead letters behind another open circuit says they wait for it, and offers Retry now.
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

describe('an open circuit on /ui in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let served: ServedApp;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let shots: string;
  const receivers: Receiver[] = [];
  const healthy = new Set<string>();
  let ep: string;
  let delivery: string;

  const get = async (p: string) => (await t.send('GET', p)).json();
  const shot = (name: string) => screenshot(page, shots, name);
  const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);

  /** A receiver that answers 503 until its `name` is put in `healthy`. */
  async function receiver(name: string) {
    const r = await startReceiver((_req, res) => res.writeHead(healthy.has(name) ? 200 : 503).end());
    receivers.push(r);
    return r;
  }
  /** Waits until the endpoint's circuit is open with `n` deliveries parked behind it. */
  const circuitOpen = (id: string, n: number) =>
    waitFor(`the circuit of ${id} open, ${n} parked`, async () => {
      const h = await get(`/v1/endpoints/${id}/health`);
      return h.state === 'open' && h.parked_count === n ? h : null;
    });
  const statuses = async (id: string) =>
    (await get(`/v1/deliveries?endpoint_id=${id}`)).data.map((d: { status: string }) => d.status);

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-ui-circuit-'));
    db = await createTestDatabase();
    t = await createTestApp(db);
    served = await serveApp(t.app, 0, '127.0.0.1');
    ep = (await createEndpoint(t, await receiver('orders'), { description: 'orders, acme' })).id;
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '50',
      HOOKPOST_BREAKER_THRESHOLD: '3',
      HOOKPOST_BREAKER_COOLDOWN_SECONDS: '3600',
      HOOKPOST_BREAKER_MAX_COOLDOWN_SECONDS: '3600',
      HOOKPOST_POLL_INTERVAL_MS: '50',
    });
    await enqueueMany(t.send, ep, 4);
    await circuitOpen(ep, 4);
    delivery = (await get(`/v1/deliveries?endpoint_id=${ep}`)).data[0].id;

    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
    await signInToAdmin(page, served.port, TOKEN);
    await page.locator('[data-metric]').first().waitFor();
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

  it('the delivery page says it waits for the circuit until the next probe, and offers no Replay', async () => {
    const d = await get(`/v1/deliveries/${delivery}`);
    assert.equal(d.status, 'failed', 'attempted, awaiting retry: the API would accept a replay');
    await go(`#/deliveries/${delivery}`);
    const waiting = page.locator('[data-waiting="circuit_open"]');
    await waiting.waitFor();
    const text = (await waiting.textContent()) ?? '';
    assert.match(text, /Waiting for the endpoint's circuit: next probe at/);
    assert.ok(text.includes(ep), text);
    assert.equal(await waiting.locator('time').getAttribute('datetime'), d.next_probe_at);
    // Accepted, it would only park again: the page says why instead of offering it.
    assert.equal(await page.getByRole('button', { name: `Replay ${delivery}` }).count(), 0);
    assert.match((await page.locator(`[data-no-replay="${delivery}"]`).textContent()) ?? '', /circuit/);
    await waiting.getByRole('button', { name: /Retry now/ }).waitFor();
    await shot('ui-delivery-waiting');
  });

  it('Retry now on the endpoint page closes the circuit, audited, and the delivery ends delivered', async () => {
    await page.locator('[data-waiting="circuit_open"]').getByRole('link', { name: ep }).click();
    const health = page.locator('section', { hasText: 'Failure streak' });
    await health.locator('[data-circuit="open"]').waitFor();
    assert.equal(await health.locator('[data-parked]').getAttribute('data-parked'), '4');
    const block = health.locator('.circuit');
    assert.match(
      (await block.textContent()) ?? '',
      /4 deliveries wait behind the open circuit: next probe at/,
    );
    await shot('ui-endpoint-circuit');

    healthy.add('orders');
    await block.getByRole('button', { name: /Retry now/ }).click();
    // The view refreshes itself: the circuit shows closed, nothing waits.
    await health.locator('[data-circuit="closed"]').waitFor();
    await health
      .locator('.inline-notice', { hasText: 'Circuit closed: 4 waiting deliveries sent now.' })
      .waitFor();
    assert.equal(await health.locator('.circuit').count(), 0);
    await waitFor('4 delivered', async () => (await statuses(ep)).every((s: string) => s === 'delivered'));

    await go(`#/deliveries/${delivery}`);
    await page.locator('.status[data-status="delivered"]').waitFor();
    assert.equal(await page.locator('[data-waiting]').count(), 0);

    const audit = (await get('/v1/audit-log?limit=20')).data.find(
      (a: { action: string }) => a.action === 'endpoint.circuit_closed',
    );
    assert.equal(audit?.resource_id, ep);
    assert.deepEqual(audit?.details, { previous_state: 'open', released: 4 });
  });

  it('a bulk replay behind an open circuit says they wait for it, and offers Retry now', async () => {
    // One attempt each: the three die at once, and three failures in a row open the circuit.
    const down = (await createEndpoint(t, await receiver('billing'), { max_attempts: 1 })).id;
    await enqueueMany(t.send, down, 3);
    await waitFor('3 dead letters, circuit open', async () => {
      const h = await get(`/v1/endpoints/${down}/health`);
      return h.state === 'open' && (await statuses(down)).every((s: string) => s === 'dead_letter');
    });
    await go(`#/dead-letters?endpoint_id=${down}`);
    const form = page.locator('section', { hasText: 'Bulk replay' });
    await form.getByRole('button', { name: 'Preview (dry run)' }).click();
    const result = form.locator('.result');
    await result.locator('[data-waiting="circuit_open"]').waitFor();
    assert.match(
      (await result.textContent()) ?? '',
      /3 dead letters match — they will wait for the circuit of/,
    );

    await form.getByRole('button', { name: 'Replay matching' }).click();
    await result.getByText(/Replay finished/).waitFor();
    const text = (await result.textContent()) ?? '';
    assert.match(text, /3 of 3 queued, 0 skipped — they wait for the circuit of ep_\S+ \(next probe at/);
    await waitFor('3 parked behind the circuit', async () =>
      (await get(`/v1/deliveries?endpoint_id=${down}`)).data.every(
        (d: { parked: string | null }) => d.parked === 'circuit_open',
      ),
    );
    await shot('ui-bulk-replay-circuit');

    healthy.add('billing');
    await result.getByRole('button', { name: /Retry now/ }).click();
    await form
      .locator('.inline-notice', { hasText: 'Circuit closed: 3 waiting deliveries sent now.' })
      .waitFor();
    await waitFor('3 delivered', async () => (await statuses(down)).every((s: string) => s === 'delivered'));
  });

  it('names the head of an ordering key, a disabled endpoint, and a wait for the endpoint limit', async () => {
    const off = (await createEndpoint(t, await receiver('off'))).id;
    await t.send('PATCH', `/v1/endpoints/${off}`, { enabled: false });
    const keyed: string[] = [];
    for (let i = 0; i < 2; i++) {
      const body = { endpoint_id: off, event_type: 'x', payload: { i }, ordering_key: 'order-7' };
      keyed.push((await (await t.send('POST', '/v1/deliveries', body)).json()).deliveries[0].id);
    }
    await go(`#/deliveries/${keyed[1]}`);
    const behind = page.locator('[data-waiting="behind_ordering_key"]');
    await behind.waitFor();
    assert.match(
      (await behind.textContent()) ?? '',
      /Waiting behind dlv_\S+, the head of ordering key order-7/,
    );
    assert.match((await page.locator(`[data-no-replay="${keyed[1]}"]`).textContent()) ?? '', /ahead of it/);
    await behind.getByRole('link', { name: keyed[0] }).click();
    const disabled = page.locator('[data-waiting="endpoint_disabled"]');
    await disabled.waitFor();
    assert.match(
      (await disabled.textContent()) ?? '',
      /is disabled.*sent once the endpoint is enabled again/,
    );

    // One at a time: the receiver holds the first request, so the second is due and waits its turn.
    const held: import('node:http').ServerResponse[] = [];
    const slow = await startReceiver((_req, res) => held.push(res));
    receivers.push(slow);
    const limited = (await createEndpoint(t, slow, { max_in_flight: 1 })).id;
    await enqueueMany(t.send, limited, 2);
    await waitFor('one in flight', () => held.length === 1);
    const queued = (await get(`/v1/deliveries?endpoint_id=${limited}&status=pending`)).data[0].id;
    await go(`#/deliveries/${queued}`);
    const turn = page.locator('[data-waiting="endpoint_limits"]');
    // It becomes "waiting its turn" once it has been due for a few seconds: refresh until then.
    await waitFor('the wait for the endpoint limit shown', async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.locator('[data-waiting]').waitFor();
      return (await turn.count()) === 1;
    });
    assert.match(
      (await turn.textContent()) ?? '',
      /waiting its turn under the endpoint's limits \(at most 1 in flight\)/,
    );
    for (const res of held.splice(0)) res.writeHead(200).end();
  });

  it('made no outside request and hit no CSP violation', () => {
    assert.deepEqual(watched.blocked, []);
    assert.deepEqual(watched.problems, []);
  });
});
