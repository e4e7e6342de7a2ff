/**
 * The pages without a browser: security headers (CSP default-src 'self', nothing inline), every
 * file the pages name is served (gzipped, revalidated by ETag), and nothing outside the asset
 * tables can be fetched through the asset routes.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { STATIC_DIR } from '../../src/ui/assets.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('pages: /ui and /docs', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  /** Every /ui/assets/… and /docs/assets/… a page names in src= or href=. */
  async function referencedAssets(page: string): Promise<string[]> {
    const html = await (await t.request(page)).text();
    return [...html.matchAll(/(?:src|href)="(\/(?:ui|docs)\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  }

  for (const page of ['/ui', '/docs', '/portal']) {
    it(`${page} has a CSP of default-src 'self' with nothing inline`, async () => {
      const res = await t.request(page);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /^default-src 'self';/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      const html = await res.text();
      for (const script of html.match(/<script\b[^>]*>/g) ?? []) assert.match(script, /\bsrc="\//, script);
      assert.doesNotMatch(html, /<style\b|\sstyle=|\son[a-z]+=/i, 'no inline style or handler');
      assert.ok((await referencedAssets(page)).length >= 3);
    });
  }

  it('serves every file the pages and their modules name, gzipped and revalidated', async () => {
    const urls = new Set([
      ...(await referencedAssets('/ui')),
      ...(await referencedAssets('/docs')),
      ...(await referencedAssets('/portal')),
    ]);
    // Modules import each other by relative name: each must be in the asset table too.
    for (const file of await readdir(STATIC_DIR)) {
      if (!file.endsWith('.js')) continue;
      const text = await readFile(path.join(STATIC_DIR, file), 'utf8');
      for (const m of text.matchAll(/from '\.\/([^']+)'/g)) urls.add(`/ui/assets/${m[1]}`);
    }
    assert.ok(urls.has('/ui/assets/uPlot.iife.min.js') && urls.has('/docs/assets/swagger-ui-bundle.js'));
    for (const url of urls) {
      const plain = await t.request(url);
      assert.equal(plain.status, 200, url);
      assert.match(plain.headers.get('content-security-policy') ?? '', /^default-src 'self'/, url);
      const body = Buffer.from(await plain.arrayBuffer());
      const zipped = await t.request(url, { headers: { 'accept-encoding': 'gzip, br' } });
      if (!url.endsWith('.png')) {
        assert.equal(zipped.headers.get('content-encoding'), 'gzip', url);
        assert.deepEqual(gunzipSync(Buffer.from(await zipped.arrayBuffer())), body, url);
      }
      const again = await t.request(url, { headers: { 'if-none-match': plain.headers.get('etag')! } });
      assert.equal(again.status, 304, url);
    }
  });

  it('frames /portal by HOOKPOST_PORTAL_FRAME_ANCESTORS only, and refuses a bad value at start', async () => {
    const framed = await createTestApp(db, {
      HOOKPOST_PORTAL_FRAME_ANCESTORS: "https://app.example.com, https://*.partner.test 'self'",
    });
    const portal = await framed.request('/portal');
    assert.match(
      portal.headers.get('content-security-policy') ?? '',
      /^default-src 'self';.*; frame-ancestors https:\/\/app\.example\.com https:\/\/\*\.partner\.test 'self'$/,
    );
    for (const other of ['/ui', '/docs', '/ui/assets/portal.js']) {
      const res = await framed.request(other);
      assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'$/, other);
    }
    const { loadConfig } = await import('../../src/config.js');
    for (const bad of [
      "https://a.test; script-src 'unsafe-inline'",
      'javascript:alert(1)',
      'https://a.test/path',
      '*',
    ]) {
      assert.throws(
        () => loadConfig({ HOOKPOST_PORTAL_FRAME_ANCESTORS: bad }),
        /HOOKPOST_PORTAL_FRAME_ANCESTORS=.* is invalid/,
        bad,
      );
    }
    assert.deepEqual(loadConfig({}).portalFrameAncestors, []);
  });

  it('answers 404 for anything outside the asset tables', async () => {
    for (const url of [
      '/ui/assets/nope.js',
      '/ui/assets/..%2F..%2F..%2Fpackage.json',
      '/ui/assets/%2Fetc%2Fpasswd',
      '/docs/assets/index.html',
      '/docs/assets/app.css',
    ]) {
      const res = await t.request(url);
      assert.equal(res.status, 404, url);
      assert.equal((await res.json()).error.code, 'not_found');
    }
  });

  it('serves /openapi.json gzipped to a client that accepts it', async () => {
    const plain = await t.request('/openapi.json');
    const zipped = await t.request('/openapi.json', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    assert.deepEqual(
      gunzipSync(Buffer.from(await zipped.arrayBuffer())),
      Buffer.from(await plain.arrayBuffer()),
    );
  });

  it('leaves /v1 responses without the page headers', async () => {
    const res = await t.send('GET', '/v1/pipeline');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-security-policy'), null);
  });
});
