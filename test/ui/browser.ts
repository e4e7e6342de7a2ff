/**
 * Real Chromium for the page tests (Debian's /usr/bin/chromium driven by playwright-core), with
 * every request that is not for 127.0.0.1 blocked and recorded: the pages must work with no
 * internet, so a test asserts the list stays empty. Shared with the portal's tests.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

export interface Watched {
  context: BrowserContext;
  /** Requests to anywhere but 127.0.0.1, aborted before they left. */
  blocked: string[];
  /** Console errors and CSP violations, per page. */
  problems: string[];
  newPage(): Promise<Page>;
}

/** A fresh context (no cache, no storage) that blocks outside requests and records page errors. */
export async function watchedContext(
  browser: Browser,
  viewport = { width: 1280, height: 900 },
): Promise<Watched> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const blocked: string[] = [];
  const problems: string[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || url.protocol === 'data:' || url.protocol === 'blob:') {
      return route.continue();
    }
    blocked.push(url.href);
    return route.abort('blockedbyclient');
  });
  return {
    context,
    blocked,
    problems,
    async newPage() {
      const page = await context.newPage();
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      return page;
    },
  };
}

/** Bytes on the wire (headers + encoded body) of everything `page` loads while `load` runs. */
export async function measureTransfer(page: Page, load: () => Promise<unknown>) {
  const responses: Promise<{ url: string; bytes: number }>[] = [];
  const onResponse = (response: import('playwright-core').Response) => {
    responses.push(
      response
        .finished()
        .then(() => response.request().sizes())
        .then((s) => ({ url: response.url(), bytes: s.responseBodySize + s.responseHeadersSize })),
    );
  };
  page.on('response', onResponse);
  await load();
  page.off('response', onResponse);
  const all = await Promise.all(responses);
  return { requests: all.length, bytes: all.reduce((n, r) => n + r.bytes, 0), files: all };
}

/**
 * A full-page PNG under `dir` (look at it); with HOOKPOST_SCREENSHOTS_DIR set, also a
 * viewport-sized one there for the README (the toast is cleared first: it would cover part of it).
 */
export async function screenshot(page: Page, dir: string, name: string): Promise<void> {
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
  const readme = process.env.HOOKPOST_SCREENSHOTS_DIR;
  if (!readme) return;
  await mkdir(readme, { recursive: true });
  await page.evaluate("document.getElementById('notice')?.replaceChildren()");
  await page.screenshot({ path: path.join(readme, `${name}.png`) });
}

/** `date` as a datetime-local control holds it: local time to the minute (the browser shares our zone). */
export function localDateTime(date: Date): string {
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** Opens /ui at `hash` (e.g. `#/endpoints`) on the hookpost at `port` and signs in with `token`. */
export async function signInToAdmin(page: Page, port: number, token: string, hash = ''): Promise<void> {
  await page.goto(`http://127.0.0.1:${port}/ui${hash}`);
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
