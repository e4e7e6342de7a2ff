/**
 * /docs in real Chromium: Swagger UI renders every operation of /openapi.json with every request
 * that is not for 127.0.0.1 blocked, no console error and no CSP violation. Prints its weight.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, measureTransfer, screenshot, watchedContext } from './browser.js';

const skip = skipUnlessInstalled(['chromium'], 'apt-get install -y chromium');

describe('API reference in Chromium', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let served: ServedApp;
  let browser: Browser;
  let shots: string;

  before(async () => {
    shots = await mkdtemp(path.join(os.tmpdir(), 'hookpost-docs-'));
    db = await createTestDatabase();
    t = await createTestApp(db);
    served = await serveApp(t.app, 0, '127.0.0.1');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await served?.close();
    await db?.drop();
    // Full-page shots are for a look while debugging; HOOKPOST_SCREENSHOTS_DIR keeps the README's.
    if (shots) await rm(shots, { recursive: true, force: true });
  });

  it('renders /docs from /openapi.json with every outside request blocked', async () => {
    const fresh = await watchedContext(browser);
    const docs = await fresh.newPage();
    const weight = await measureTransfer(docs, async () => {
      await docs.goto(`http://127.0.0.1:${served.port}/docs`);
      await docs.locator('.opblock').first().waitFor();
      await docs.waitForLoadState('networkidle');
    });
    const doc = await (await t.request('/openapi.json')).json();
    let operations = 0;
    for (const ops of Object.values(doc.paths as Record<string, object>))
      operations += Object.keys(ops).length;
    assert.equal(await docs.locator('.opblock').count(), operations, 'one block per operation');
    assert.match((await docs.locator('.info .title').textContent()) ?? '', /hookpost/);
    await docs.getByText('/v1/deliveries/{id}/replay').first().waitFor();
    // Opening an operation shows its parameters and the documented error shape.
    await docs.locator('.opblock-summary', { hasText: '/v1/endpoints/{id}/health' }).first().click();
    await docs.getByText('unknown id').first().waitFor();
    await screenshot(docs, shots, 'docs');
    process.stdout.write(
      `# /docs first load: ${weight.requests} requests, ${weight.bytes} bytes transferred\n`,
    );
    await writeFile(path.join(shots, 'docs-weight.json'), JSON.stringify(weight, null, 2));
    assert.deepEqual(fresh.blocked, [], 'no request left 127.0.0.1');
    assert.deepEqual(fresh.problems, [], 'no console error or CSP violation');
    await fresh.context.close();
  });
});
