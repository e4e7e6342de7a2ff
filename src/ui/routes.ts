/**
 * The pages: GET /openapi.json, GET /docs (Swagger UI over that document) and GET /ui (the admin
 * page). They are static files plus scripts that call the same /v1 API with the key the person
 * typed in, so a page can do nothing its key could not do with curl.
 */
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { errorBody } from '../api/errors.js';
import { buildOpenApiDocument } from '../api/openapi/document.js';
import { documentRoute } from '../api/openapi/registry.js';
import { type AssetTable, docsAssets, STATIC_DIR, sendFile, uiAssets } from './assets.js';

/**
 * Everything from hookpost itself and nothing inline: no inline script or style element, no
 * eval. `img-src data:` is for the small SVG icons inside Swagger UI's stylesheet. No framing,
 * except /portal by the origins HOOKPOST_PORTAL_FRAME_ANCESTORS lists.
 */
export function pageCsp(frameAncestors: readonly string[] = []): string {
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'";
  return (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; " +
    `form-action 'self'; frame-ancestors ${ancestors}`
  );
}

export const PAGE_CSP = pageCsp();

/** Security headers for every page and asset. */
export function pageHeaders(csp = PAGE_CSP): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.header('content-security-policy', csp);
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'no-referrer');
  };
}

function assetRoute(table: AssetTable) {
  return (c: Context) => {
    const file = table[c.req.param('name') ?? ''];
    if (!file) return c.json(errorBody('not_found', `no asset ${c.req.path}`), 404);
    return sendFile(c, file);
  };
}

const html = { description: 'the page', contentType: 'text/html' };
const asset = (prefix: string) => ({
  params: z.object({ name: z.string().meta({ description: 'a file name the page refers to' }) }),
  responses: { 200: { description: 'the file', contentType: 'application/octet-stream' } },
  errors: [404],
  summary: `A file loaded by ${prefix}`,
  tag: 'pages',
  method: 'get' as const,
  auth: false,
});
documentRoute({
  method: 'get',
  path: '/openapi.json',
  operationId: 'openapi',
  tag: 'pages',
  summary: 'This document (OpenAPI 3.1)',
  responses: { 200: { description: 'the document', contentType: 'application/json' } },
});
documentRoute({
  method: 'get',
  path: '/docs',
  operationId: 'docs',
  tag: 'pages',
  summary: 'The API reference',
  responses: { 200: html },
});
documentRoute({ ...asset('/docs'), path: '/docs/assets/{name}', operationId: 'docsAsset' });
documentRoute({
  method: 'get',
  path: '/ui',
  operationId: 'adminPage',
  tag: 'pages',
  summary: 'The admin page (asks for a key)',
  responses: { 200: html },
});
documentRoute({ ...asset('/ui'), path: '/ui/assets/{name}', operationId: 'uiAsset' });
documentRoute({
  method: 'get',
  path: '/portal',
  operationId: 'partnerPortal',
  tag: 'pages',
  summary: "A tenant's partner portal, opened by a portal-session URL (the token in the fragment)",
  description: 'Framable by the origins in HOOKPOST_PORTAL_FRAME_ANCESTORS (CSP frame-ancestors).',
  responses: { 200: html },
});

export interface PageOptions {
  /** Origins allowed to frame /portal; empty: none. */
  portalFrameAncestors?: readonly string[];
}

/** Mounts the pages on `app`. Call after every route is registered (the document is built once). */
export function mountPages(app: Hono, options: PageOptions = {}): void {
  let built: { text: Buffer; gzip: Buffer } | undefined;
  app.get('/openapi.json', (c) => {
    if (!built) {
      const text = Buffer.from(JSON.stringify(buildOpenApiDocument()));
      built = { text, gzip: gzipSync(text) };
    }
    c.header('content-type', 'application/json; charset=utf-8');
    c.header('vary', 'accept-encoding');
    // 38 kB of JSON, 5 kB gzipped: /docs loads it on every visit.
    if (/\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) {
      c.header('content-encoding', 'gzip');
      return c.body(new Uint8Array(built.gzip), 200);
    }
    return c.body(new Uint8Array(built.text), 200);
  });

  const pages = new Hono();
  for (const prefix of ['/docs', '/docs/*', '/ui', '/ui/*']) pages.use(prefix, pageHeaders());
  pages.get('/docs', (c) => sendFile(c, path.join(STATIC_DIR, 'docs.html')));
  pages.get('/docs/assets/:name', assetRoute(docsAssets()));
  pages.get('/ui', (c) => sendFile(c, path.join(STATIC_DIR, 'admin.html')));
  pages.get('/ui/assets/:name', assetRoute(uiAssets()));
  // The page only: its scripts and styles come from /ui/assets, which need no framing rule.
  pages.use('/portal', pageHeaders(pageCsp(options.portalFrameAncestors)));
  pages.get('/portal', (c) => sendFile(c, path.join(STATIC_DIR, 'portal.html')));
  app.route('/', pages);
}
