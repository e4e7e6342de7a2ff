/**
 * The endpoint editor's credential sections on /ui in real Chromium: Basic auth, a legacy
 * signature and a TLS CA and client certificate uploaded as PEM files. Secrets show masked,
 * saving again without a change sends nothing, and a masked value kept keeps the stored secret.
 * That deliveries carry what is stored is tested in test/dispatch/partner-auth.test.ts and
 * test/partners/mtls.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import { createSecretBox } from '../../src/endpoints/secrets.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  type TestDatabase,
  TOKEN,
  waitFor,
} from '../helpers.js';
import { type CertificateFactory, certificateFactory } from '../partners/certificates.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { launchChromium, screenshot, signInToAdmin, type Watched, watchedContext } from './browser.js';

const KEY = 'ui-credentials-test-key-0123456789';
const skip = skipUnlessInstalled(['chromium', 'openssl'], 'apt-get install -y chromium openssl');

describe('endpoint credentials in the /ui editor (Chromium)', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let served: ServedApp;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let receiver: Receiver;
  let certs: CertificateFactory;
  let dir: string;
  let id: string;

  const get = async (p: string) => (await t.send('GET', p)).json();

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-ui-credentials-'));
    certs = certificateFactory();
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    served = await serveApp(t.app, 0, '127.0.0.1');
    receiver = await startReceiver();
    id = (await createEndpoint(t, receiver.url.replace('http:', 'https:'), { description: 'bank' })).id;
    browser = await launchChromium();
    watched = await watchedContext(browser);
    page = await watched.newPage();
    await signInToAdmin(page, served.port, TOKEN, '#/endpoints');
  });

  after(async () => {
    await browser?.close();
    await served?.close();
    await receiver?.close();
    await db?.drop();
    certs?.cleanup();
    // The PEM files and the full-page shot are for a look while debugging: nothing stays behind.
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('sets Basic auth, a legacy signature and uploaded TLS material; reads show them masked', async () => {
    const ca = certs.ca('Bank CA');
    const client = ca.issue('hookpost-at-bank');
    await writeFile(path.join(dir, 'ca.pem'), ca.cert);
    await writeFile(path.join(dir, 'client.pem'), client.cert);
    await writeFile(path.join(dir, 'client.key'), client.key);

    await page.getByRole('link', { name: id }).click();
    const form = page.getByRole('form', { name: `Edit ${id}` });
    await form.waitFor();
    await form.locator('summary', { hasText: 'Authentication' }).click();
    await form.getByLabel('Authentication').selectOption('basic');
    await form.getByLabel('User name').fill('acme');
    await form.getByLabel('Password').fill('bank-password-SECRET');
    await form.locator('summary', { hasText: 'TLS' }).click();
    await form.getByLabel('CA certificates file').setInputFiles(path.join(dir, 'ca.pem'));
    await form.getByLabel('Client certificate file').setInputFiles(path.join(dir, 'client.pem'));
    await form.getByLabel('Client key file').setInputFiles(path.join(dir, 'client.key'));
    await form.locator('summary', { hasText: 'Legacy signature' }).click();
    await form.getByLabel('Send a legacy signature').check();
    await form.getByLabel('Signature header').fill('X-Bank-Signature');
    await form.getByLabel('Signing secret').fill('legacy-SECRET');
    await form.getByLabel('Prefix').fill('sha256=');
    await form.evaluate((el) => el.scrollIntoView());
    await screenshot(page, dir, 'ui-endpoint-credentials');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.locator('.inline-notice', { hasText: /saved/ }).waitFor();

    const e = await get(`/v1/endpoints/${id}`);
    assert.deepEqual(e.auth, { type: 'basic', username: 'acme', password: '••••••CRET' });
    assert.equal(e.tls.client_certificate.subject, 'CN=hookpost-at-bank');
    assert.equal(e.tls.ca_certificates[0].subject, 'CN=Bank CA');
    assert.equal(e.legacy_signature.header, 'X-Bank-Signature');
    assert.equal(e.legacy_signature.prefix, 'sha256=');
    const box = createSecretBox(KEY);
    const [row] = await db.sql`SELECT auth, tls, legacy_signature FROM endpoints WHERE id = ${id}`;
    assert.equal(box.open(row!.auth.password), 'bank-password-SECRET');
    assert.equal(box.open(row!.tls.client_key).trim(), client.key.trim());
    assert.equal(box.open(row!.legacy_signature.secret), 'legacy-SECRET');
  });

  it('shows secrets masked on the next edit, and saving without a change sends nothing', async () => {
    await page.reload();
    const form = page.getByRole('form', { name: `Edit ${id}` });
    await form.waitFor();
    // Sections with something stored are open on edit; the secrets are masks, never values.
    assert.equal(await form.getByLabel('Password').inputValue(), '••••••CRET');
    assert.equal(await form.getByLabel('Signing secret').inputValue(), '••••••CRET');
    assert.match((await form.textContent()) ?? '', /stored: CN=hookpost-at-bank, until/);
    assert.ok(!(await page.content()).includes('PRIVATE KEY'), 'the key is nowhere on the page');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.locator('.inline-notice', { hasText: /Nothing changed/ }).waitFor();

    // A changed user name with the masked password kept: the stored password stays.
    await form.getByLabel('User name').fill('acme-2');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.locator('.inline-notice', { hasText: /saved/ }).waitFor();
    const [row] = await db.sql`SELECT auth FROM endpoints WHERE id = ${id}`;
    assert.equal(row!.auth.username, 'acme-2');
    assert.equal(createSecretBox(KEY).open(row!.auth.password), 'bank-password-SECRET');
  });

  it('removes auth and the client certificate from the editor', async () => {
    const form = page.getByRole('form', { name: `Edit ${id}` });
    await form.getByLabel('Authentication').selectOption('');
    await form.getByLabel('Remove the stored client certificate').check();
    await form.getByLabel('Remove the stored client key').check();
    await form.getByRole('button', { name: 'Save' }).click();
    // The notice of the previous save may still be there: wait for the change itself.
    const e = await waitFor('the PATCH', async () => {
      const read = await get(`/v1/endpoints/${id}`);
      return read.auth === null ? read : undefined;
    });
    assert.equal(e.tls.client_certificate, null);
    assert.equal(e.tls.ca_certificates[0].subject, 'CN=Bank CA', 'the CA stays');
  });

  it('made no outside request and hit no CSP violation', () => {
    assert.deepEqual(watched.blocked, []);
    assert.deepEqual(watched.problems, []);
  });
});
