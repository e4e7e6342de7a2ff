/** Shared test plumbing: a fresh database per test file, a test config, an app, local receivers. */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../src/api/app.js';
import { type Config, loadConfig } from '../src/config.js';
import { connect, type Sql } from '../src/db/connect.js';
import { migrate, readMigrations } from '../src/db/migrate.js';
import type { RetryPolicy } from '../src/deliveries/retry-policy.js';
import { createSecretBox } from '../src/endpoints/secrets.js';
import { EndpointStore } from '../src/endpoints/store.js';
import { createLogger } from '../src/log.js';
import type { HookpostMetrics } from '../src/metrics/registry.js';
import { type ClaimedDelivery, type ClaimOptions, claimBatch } from '../src/queue/claim.js';
import type { CompletedAttempt } from '../src/queue/complete.js';
import { createWaker } from '../src/queue/wakeup.js';

export const TOKEN = 'test-admin-token-0123456789';

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error('run tests with `npm test` (it provides TEST_DATABASE_URL)');
  return url;
}

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** Creates an empty database for one test file, migrated, and a pool connected to it. */
export async function createTestDatabase(migrated = true): Promise<TestDatabase> {
  const name = `hp_test_${randomBytes(6).toString('hex')}`;
  const admin = connect(adminUrl(), { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 20 });
  if (migrated) await migrate(sql);
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}

/** A config as the process would load it, with test-friendly overrides. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'silent', ...env });
}

/** A Response whose JSON tests read freely: the assertions check the shape. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by assertions
export type TestResponse = Omit<Response, 'json'> & { json(): Promise<any> };

/**
 * The Hono app over a test database, plus helpers that send authorised JSON requests. Pass
 * `metrics` to share one registry with a test dispatcher, as `hookpost start` does, and `sql` to
 * serve the requests from another pool of the same database (one with a statement_timeout).
 */
export async function createTestApp(
  db: TestDatabase,
  env: Record<string, string> = {},
  options: { metrics?: HookpostMetrics; sql?: Sql } = {},
) {
  const config = testConfig(env);
  const log = createLogger('silent');
  const waker = createWaker(db.sql);
  const app = createApp({
    sql: options.sql ?? db.sql,
    config,
    log,
    adminToken: TOKEN,
    endpoints: new EndpointStore(db.sql, createSecretBox(config.secretKey, config.secretKeyPrevious)),
    migrationCount: (await readMigrations()).length,
    waker,
    metrics: options.metrics,
  });
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    }) as Promise<TestResponse>;
  const request = (path: string, init?: RequestInit) => app.request(path, init) as Promise<TestResponse>;
  return { app, config, send, request };
}

export interface Receiver {
  url: string;
  requests: { headers: http.IncomingHttpHeaders; body: Buffer; at: number }[];
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

/** A real HTTP server on 127.0.0.1 that records what it receives; answers 200 unless told otherwise. */
export async function startReceiver(handler?: Handler): Promise<Receiver> {
  const requests: Receiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ headers: req.headers, body, at: Date.now() });
      if (handler) handler(req, res, body);
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws `what`). */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A Dispatcher over the test database, with fast test timings unless overridden. */
export async function startTestDispatcher(
  db: TestDatabase,
  env: Record<string, string> = {},
  options: { metrics?: HookpostMetrics; claimSql?: Sql } = {},
) {
  const { Dispatcher } = await import('../src/dispatch/dispatcher.js');
  const config = testConfig({
    HOOKPOST_RETRY_BASE_SECONDS: '0.01',
    HOOKPOST_RETRY_CAP_SECONDS: '0.05',
    ...env,
  });
  const dispatcher = new Dispatcher({
    sql: db.sql,
    config,
    log: createLogger('silent'),
    secrets: createSecretBox(config.secretKey, config.secretKeyPrevious),
    userAgent: 'hookpost/test',
    metrics: options.metrics,
    claimSql: options.claimSql,
  });
  await dispatcher.start();
  return dispatcher;
}

type Send = Awaited<ReturnType<typeof createTestApp>>['send'];

/** Enqueues `count` deliveries to one endpoint through the batch API, 1000 per request. */
export async function enqueueMany(
  send: Send,
  endpointId: string,
  count: number,
  payload: (n: number) => unknown = (n) => ({ i: n }),
  eventType = 'x',
): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const items = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: eventType,
      payload: payload(start + i),
    }));
    const res = await send('POST', '/v1/deliveries/batch', { items });
    if (res.status !== 202) throw new Error(`batch enqueue answered ${res.status}`);
  }
}

type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/**
 * Creates an endpoint pointing at `receiver` (a Receiver or a URL) through the API, with any
 * extra fields; returns its id and secret. Fails the test on anything but 201.
 */
export async function createEndpoint(
  t: Pick<TestApp, 'send'>,
  receiver: Receiver | string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; secret: string; tenant_id: string }> {
  const url = typeof receiver === 'string' ? receiver : receiver.url;
  const res = await t.send('POST', '/v1/endpoints', { url, ...extra });
  if (res.status !== 201) throw new Error(`endpoint create answered ${res.status}: ${await res.text()}`);
  return res.json();
}

/**
 * Creates an API key through the admin token and returns a `send` that uses it, as a partner or
 * an internal service would call the API.
 */
export async function keySender(
  t: TestApp,
  body: { scopes: string[]; tenant_id?: string; rate_limit_per_second?: number; name?: string },
) {
  const res = await t.send('POST', '/v1/api-keys', { name: body.name ?? 'test key', ...body });
  if (res.status !== 201) throw new Error(`key create answered ${res.status}: ${await res.text()}`);
  const created = (await res.json()) as { id: string; key: string };
  const send = (method: string, path: string, payload?: unknown, headers: Record<string, string> = {}) =>
    t.send(method, path, payload, { authorization: `Bearer ${created.key}`, ...headers });
  return { ...created, send };
}

/** A first-attempt 200 for a claimed delivery, as the dispatcher would write it. */
export function deliveredResult(
  claim: { id: string; endpointId: string; leaseToken: string; attempt?: number },
  overrides: Partial<CompletedAttempt> = {},
): CompletedAttempt {
  return {
    deliveryId: claim.id,
    endpointId: claim.endpointId,
    leaseToken: claim.leaseToken,
    attempt: claim.attempt ?? 1,
    startedAt: new Date(),
    durationMs: 1,
    statusCode: 200,
    outcome: 'success',
    errorClass: null,
    error: null,
    snippet: null,
    status: 'delivered',
    delayMs: 0,
    ...overrides,
  };
}

/** A claim's attempt ending `status`: a 200 when delivered, else a retryable 500. */
export function attemptResult(
  claim: { id: string; endpointId: string; leaseToken: string; attempt: number },
  status: CompletedAttempt['status'],
): CompletedAttempt {
  const failed = status !== 'delivered';
  return deliveredResult(claim, {
    durationMs: 5,
    status,
    ...(failed ? { statusCode: 500, outcome: 'retryable', errorClass: 'http_500' } : {}),
  });
}

/** One claim's deliveries: the dispatcher's claim statement, without its next-due answer. */
export async function claimDue(sql: Sql, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  return (await claimBatch(sql, options)).deliveries;
}

/** A retry policy with no backoff (a reaped delivery is due at once) and `maxAttempts` attempts. */
export function noBackoff(maxAttempts: number): RetryPolicy {
  return { baseSeconds: 0, capSeconds: 0, maxAttempts, retryAfterMaxSeconds: 0 };
}
