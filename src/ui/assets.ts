/**
 * The files the pages load, served by hookpost itself (no CDN: the pages work with no internet).
 * Only files named in the tables below can be served, so no path from a request ever reaches
 * the file system. Each is read and gzipped once, on first request, and kept in memory: the
 * whole set is a few MB, and Swagger UI's bundle shrinks from 1.7 MB to about 0.5 MB gzipped.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Context } from 'hono';

const require = createRequire(import.meta.url);
const packageDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`));

/** src/ui/static, from the compiled module in dist/src/ui (the package ships src/ui/static). */
export const STATIC_DIR = fileURLToPath(new URL('../../../src/ui/static/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

interface Loaded {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
}

/** name in the URL → absolute file path. */
export type AssetTable = Record<string, string>;

/** The admin page's and the portal's files (the two pages share the scripts). */
export function uiAssets(): AssetTable {
  const own = ['app.css', 'favicon.svg', 'api.js', 'dom.js', 'format.js', 'admin.js', 'views-pipeline.js'];
  own.push('views-endpoints.js', 'views-dead-letters.js', 'views-deliveries.js', 'latency-chart.js');
  own.push('shell.js', 'portal.js', 'views-resend.js', 'endpoint-editor.js', 'endpoint-fields.js');
  own.push('endpoint-actions.js', 'endpoint-filter.js', 'endpoint-credentials.js', 'forms.css', 'views.css');
  own.push('waiting.js');
  const table: AssetTable = Object.fromEntries(own.map((f) => [f, path.join(STATIC_DIR, f)]));
  const uplot = path.join(packageDir('uplot'), 'dist');
  table['uPlot.iife.min.js'] = path.join(uplot, 'uPlot.iife.min.js');
  table['uPlot.min.css'] = path.join(uplot, 'uPlot.min.css');
  return table;
}

/** Swagger UI's bundle and our initialiser for /docs. */
export function docsAssets(): AssetTable {
  const swagger = packageDir('swagger-ui-dist');
  return {
    'swagger-ui-bundle.js': path.join(swagger, 'swagger-ui-bundle.js'),
    'swagger-ui.css': path.join(swagger, 'swagger-ui.css'),
    'favicon-32x32.png': path.join(swagger, 'favicon-32x32.png'),
    'docs.js': path.join(STATIC_DIR, 'docs.js'),
    'docs.css': path.join(STATIC_DIR, 'docs.css'),
  };
}

const cache = new Map<string, Promise<Loaded>>();

async function load(file: string): Promise<Loaded> {
  const body = await readFile(file);
  const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  // Images are compressed already; text shrinks 3 to 4 times.
  const gzip = type.startsWith('image/png') ? null : gzipSync(body, { level: 9 });
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, gzip, type, etag };
}

/**
 * Answers with one file: 304 when the browser has it, gzipped when the browser accepts it.
 * `cacheControl` is short for the pages (they name the assets) and for the assets too, since
 * their names carry no hash: revalidation by ETag makes a reload cost a few hundred bytes.
 */
export async function sendFile(c: Context, file: string, cacheControl = 'no-cache'): Promise<Response> {
  let loading = cache.get(file);
  if (!loading) {
    loading = load(file);
    cache.set(file, loading);
    loading.catch(() => cache.delete(file));
  }
  const asset = await loading;
  c.header('cache-control', cacheControl);
  c.header('etag', asset.etag);
  c.header('vary', 'accept-encoding');
  if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304);
  c.header('content-type', asset.type);
  if (asset.gzip && /\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) {
    c.header('content-encoding', 'gzip');
    return c.body(new Uint8Array(asset.gzip), 200);
  }
  return c.body(new Uint8Array(asset.body), 200);
}
