/**
 * A service using the packed @hookpost/client from a clean project (package.test.ts installs
 * the tarball next to this file, compiles it strictly and runs it against a live hookpost).
 * It prints one JSON report on stdout; the test asserts on it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createHookpostClient,
  type DeliveryDetail,
  HookpostError,
  verifyWebhook,
  WebhookVerificationError,
} from '@hookpost/client';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/** Every request the client sends, as "METHOD /path?query" (the `fetch` option at work). */
const sent: string[] = [];
const client = createHookpostClient({
  baseUrl: env('HOOKPOST_URL'),
  token: env('HOOKPOST_TOKEN'),
  fetch: (request) => {
    const url = new URL(request.url);
    sent.push(`${request.method} ${url.pathname}${url.search}`);
    return fetch(request);
  },
});
const tenant = 'scratch_tenant';

/** The data of a successful call; the HookpostError otherwise. */
async function must<T>(call: Promise<{ data?: T; error?: HookpostError }>): Promise<T> {
  const { data, error } = await call;
  if (error) throw error;
  return data as T;
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A receiver that keeps each request exactly as it arrived. */
async function startRecorder() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers[name] = value;
      }
      received.push({ path: req.url ?? '', headers, body: new Uint8Array(Buffer.concat(chunks)) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

/** The README's hono receiver, as its own process, verifying with `key`. */
async function startReadmeReceiver(key: string) {
  const port = await new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const child: ChildProcess = spawn(process.execPath, ['dist/hono-receiver.js'], {
    env: { PATH: process.env.PATH ?? '', HOOKPOST_WEBHOOK_KEY: key, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  await until('the README receiver to listen', () => (output.includes('listening on') ? true : undefined));
  return {
    url: `http://127.0.0.1:${port}/webhooks/hookpost`,
    lines: () => output.trim().split('\n').slice(1),
    child,
  };
}

/** A delivery once it is delivered (the receiver answered and the result was written). */
function delivered(id: string): Promise<DeliveryDetail> {
  return until(`delivery ${id}`, async () => {
    const detail = await must(client.GET('/v1/deliveries/{id}', { params: { path: { id } } }));
    return detail.status === 'delivered' ? detail : undefined;
  });
}

async function verdict(key: string | string[], request: Received, asHeaders: boolean) {
  try {
    const headers = asHeaders ? new Headers(request.headers) : request.headers;
    return { ok: true, payload: await verifyWebhook({ headers, body: request.body, key }) };
  } catch (error) {
    if (error instanceof WebhookVerificationError) return { ok: false, reason: error.reason };
    throw error;
  }
}

async function main() {
  const recorder = await startRecorder();
  const created = (scheme: 'v1' | 'v1a') =>
    must(
      client.POST('/v1/endpoints', {
        body: {
          tenant_id: tenant,
          url: `${recorder.url}/${scheme}`,
          signature_scheme: scheme,
          event_types: ['order.*'],
        },
      }),
    );
  const v1 = await created('v1');
  const v1a = await created('v1a');
  const keysBefore = { v1: v1.secret!, v1a: v1a.public_key! };

  // One enqueue with an Idempotency-Key (fanned out to both endpoints), then the same key with
  // another body: a 409 as a typed error.
  const order = { tenant_id: tenant, event_type: 'order.created', payload: { order_id: 'o1', total: 12.5 } };
  const firstCall = await client.POST('/v1/deliveries', {
    body: order,
    params: { header: { 'Idempotency-Key': 'scratch-order-1' } },
  });
  const first = await must(Promise.resolve(firstCall));
  const repeated = await client.POST('/v1/deliveries', {
    body: order,
    params: { header: { 'Idempotency-Key': 'scratch-order-1' } },
  });
  const conflict = await client.POST('/v1/deliveries', {
    body: { ...order, payload: { order_id: 'o1', total: 99 } },
    params: { header: { 'Idempotency-Key': 'scratch-order-1' } },
  });
  const batch = await must(
    client.enqueueBatch(
      [1, 2, 3].map((n) => ({
        tenant_id: tenant,
        event_type: 'order.updated',
        payload: { order_id: 'o1', n },
      })),
      { idempotencyKey: 'scratch-batch-1' },
    ),
  );
  const firstIds = [first, ...batch.results].flatMap((r) => r.deliveries.map((d) => d.id));
  const details = await Promise.all(firstIds.map(delivered));

  // Rotation: hookpost signs with the new and the old key during the grace period.
  const rotatedV1 = await must(
    client.POST('/v1/endpoints/{id}/rotate-secret', { params: { path: { id: v1.id } } }),
  );
  const rotatedV1a = await must(
    client.POST('/v1/endpoints/{id}/rotate-secret', { params: { path: { id: v1a.id } } }),
  );
  const keysAfter = { v1: rotatedV1.secret!, v1a: rotatedV1a.public_key! };
  const afterRotation = await must(
    client.POST('/v1/deliveries', {
      body: { tenant_id: tenant, event_type: 'order.shipped', payload: { order_id: 'o1' } },
    }),
  );
  await Promise.all(afterRotation.deliveries.map((d) => delivered(d.id)));

  // Ordered deliveries to the README's receiver, then a replay of the first one.
  const shipments = await must(
    client.POST('/v1/endpoints', {
      body: { tenant_id: tenant, url: 'http://127.0.0.1:9/placeholder', event_types: ['shipment.*'] },
    }),
  );
  const readme = await startReadmeReceiver(shipments.secret!);
  await must(
    client.PATCH('/v1/endpoints/{id}', { params: { path: { id: shipments.id } }, body: { url: readme.url } }),
  );
  const shipped = await must(
    client.enqueueBatch(
      ['packed', 'shipped', 'delivered'].map((status) => ({
        tenant_id: tenant,
        endpoint_id: shipments.id,
        event_type: 'shipment.updated',
        ordering_key: 's1',
        payload: { shipment_id: 's1', status },
      })),
    ),
  );
  const shipmentIds = shipped.results.map((r) => r.deliveries[0]!.id);
  await Promise.all(shipmentIds.map(delivered));
  const replay = await client.POST('/v1/deliveries/{id}/replay', {
    params: { path: { id: shipmentIds[0]! } },
  });
  await until('the replay to arrive', () =>
    readme.lines().some((l) => l.startsWith('duplicate')) ? true : undefined,
  );
  readme.child.kill();

  // Every delivery of the tenant, three a page.
  const listed: string[] = [];
  const before = sent.length;
  for await (const delivery of client.list('/v1/deliveries', {
    params: { query: { tenant_id: tenant, limit: '3' } },
  })) {
    listed.push(delivery.id);
  }
  const pageRequests = sent.slice(before);

  // What the recorder got, verified as a partner would.
  const verified = [];
  for (const [i, request] of recorder.received.entries()) {
    const scheme = request.path === '/v1a' ? 'v1a' : 'v1';
    const rotated = afterRotation.message_id === request.headers['webhook-id'];
    verified.push({
      scheme,
      rotated,
      signatures: request.headers['webhook-signature']!.split(' ').length,
      withOldKey: await verdict(keysBefore[scheme], request, i % 2 === 0),
      withNewKey: rotated ? await verdict(keysAfter[scheme], request, i % 2 === 1) : null,
      withWrongKey: await verdict(scheme === 'v1' ? keysAfter.v1a : keysAfter.v1, request, true),
      raw: { headers: request.headers, body: Buffer.from(request.body).toString('base64') },
    });
  }
  recorder.server.close();

  const report = {
    firstStatus: firstCall.response.status,
    repeatedStatus: repeated.response.status,
    repeatedSameIds: repeated.data?.message_id === first.message_id,
    conflict: {
      isHookpostError: conflict.error instanceof HookpostError,
      status: conflict.error?.status,
      code: conflict.error?.code,
      message: conflict.error?.message,
    },
    batchDuplicate: batch.results.map((r) => r.duplicate),
    details: details.map((d) => ({
      id: d.id,
      status: d.status,
      attempts: d.attempts.length,
      payload: d.payload,
    })),
    enqueuedIds: [...firstIds, ...afterRotation.deliveries.map((d) => d.id), ...shipmentIds],
    listed,
    pageRequests,
    replayStatus: replay.response.status,
    readmeReceiver: readme.lines(),
    keys: { before: keysBefore, after: keysAfter },
    verified,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
