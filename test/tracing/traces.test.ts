/**
 * OpenTelemetry traces end to end: a real `hookpost start` exporting to a real OTLP/HTTP receiver
 * on loopback (otlp-sink.ts), once per protocol. Checks the caller's trace is continued (server
 * span, database span, every attempt and retry), the attempts' attributes and ERROR status, the
 * link of a replay, traceparent at partners only when asked, trace_id in the delivery log line,
 * and that with tracing off no module of the SDK is loaded at all.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  type HookpostProcess,
  runHookpost,
  UNUSED_DATA_DIR,
  untilListening,
} from '../cli/process.js';
import { createTestDatabase, type Receiver, startReceiver, type TestDatabase, waitFor } from '../helpers.js';
import { type OtlpSink, type SinkSpan, startOtlpSink } from './otlp-sink.js';

const ADMIN = 'tracing-test-admin-token-0123456789';
const PRELOAD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'loaded-modules.js');

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** A caller's trace: its id, its span's id, and the traceparent header naming them. */
function callerTrace() {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** The @opentelemetry packages the process reported loading when it exited (loaded-modules.ts). */
function loadedModules(output: string): string[] {
  const line = /OTEL_MODULES (\[.*\])/.exec(output);
  assert.ok(line, `no OTEL_MODULES line in:\n${output}`);
  return JSON.parse(line[1]!);
}

/** A hookpost process with its API at `port`, started with `env` over the test database. */
async function startHookpost(db: TestDatabase, env: Record<string, string>) {
  const port = await freePort();
  const hp = runHookpost(['start'], {
    DATABASE_URL: db.url,
    PORT: String(port),
    HOOKPOST_ADMIN_TOKEN: ADMIN,
    HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
    HOOKPOST_DATA_DIR: UNUSED_DATA_DIR,
    HOOKPOST_POLL_INTERVAL_MS: '100',
    HOOKPOST_RETRY_BASE_SECONDS: '0.05',
    HOOKPOST_RETRY_CAP_SECONDS: '0.1',
    NODE_OPTIONS: `--import=${PRELOAD}`,
    ...env,
  });
  await untilListening(hp);
  const api = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
    return { status: res.status, body: (await res.json()) as any };
  };
  return { hp, api };
}

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  describe(`traces over OTLP ${protocol}`, () => {
    let db: TestDatabase;
    let sink: OtlpSink;
    let receiver: Receiver;
    let hp: HookpostProcess;
    let api: Awaited<ReturnType<typeof startHookpost>>['api'];
    /** Messages whose first attempt the receiver answers 500. */
    const failedOnce = new Set<string>();
    const original = callerTrace();
    let deliveryId = '';

    before(async () => {
      db = await createTestDatabase();
      sink = await startOtlpSink();
      receiver = await startReceiver((req, res, body) => {
        const id = String(req.headers['webhook-id']);
        if (body.toString().includes('"fail":true') && !failedOnce.has(id)) {
          failedOnce.add(id);
          res.writeHead(500).end('not now');
        } else res.writeHead(200).end('ok');
      });
      ({ hp, api } = await startHookpost(db, {
        LOG_LEVEL: 'debug',
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_SERVICE_NAME: 'hookpost-test',
      }));
    });
    // Each part may be missing when `before` failed part-way; the rest is still closed.
    after(async () => {
      await hp?.stop();
      await receiver?.close();
      await sink?.close();
      await db?.drop();
    });

    const attemptsOf = (id: string) =>
      sink.spans
        .filter((s) => s.name === 'webhook attempt' && s.attributes['hookpost.delivery_id'] === id)
        .sort((a, b) => Number(a.attributes['hookpost.attempt']) - Number(b.attributes['hookpost.attempt']));
    /** The span of that name in that trace, once exported (spans end, and arrive, in any order). */
    const spanNamed = async (name: string, traceId: string) =>
      (await waitFor(`span ${name}`, () =>
        sink.spans.find((s) => s.name === name && s.traceId === traceId),
      ))!;

    it("continues the caller's trace: server span, database span, every attempt and its retry", async () => {
      const endpoint = await api('POST', '/v1/endpoints', { url: `${receiver.url}?token=not-in-spans` });
      assert.equal(endpoint.status, 201);
      assert.equal(endpoint.body.propagate_trace, false);
      const enqueued = await api(
        'POST',
        '/v1/deliveries',
        { endpoint_id: endpoint.body.id, event_type: 'order.created', payload: { fail: true } },
        { traceparent: original.header },
      );
      assert.equal(enqueued.status, 202);
      deliveryId = enqueued.body.deliveries[0].id;

      await waitFor('two attempt spans', () => attemptsOf(deliveryId).length >= 2);
      const attempts = attemptsOf(deliveryId);
      const server = await spanNamed('POST /v1/deliveries', original.traceId);
      assert.equal(server.kind, 2);
      assert.equal(server.parentSpanId, original.spanId);
      assert.equal(server.attributes['http.response.status_code'], 202);
      assert.equal(server.service, 'hookpost-test');
      const write = await spanNamed('INSERT messages', original.traceId);
      assert.equal(write.parentSpanId, server.spanId);

      const [first, retry] = attempts as [SinkSpan, SinkSpan];
      for (const span of [first, retry]) {
        assert.equal(span.traceId, original.traceId, 'attempts stay in the caller trace');
        assert.equal(span.parentSpanId, server.spanId);
        assert.equal(span.kind, 3);
        assert.equal(span.attributes['hookpost.endpoint_id'], endpoint.body.id);
        assert.equal(span.attributes['hookpost.tenant_id'], 'default');
        assert.equal(span.attributes['url.full'], receiver.url, 'url.full has no query string');
        assert.ok(span.events.includes('request.sent') && span.events.includes('response.first_byte'));
      }
      assert.deepEqual([first.attributes['hookpost.attempt'], retry.attributes['hookpost.attempt']], [1, 2]);
      assert.equal(first.status, 2, 'a failed attempt is ERROR');
      assert.equal(first.attributes['error.type'], 'http_500');
      assert.equal(first.attributes['http.response.status_code'], 500);
      assert.ok(first.events.includes('connect'), 'the first attempt opened its connection');
      assert.equal(first.attributes['hookpost.connection.reused'], false);
      assert.notEqual(retry.status, 2);
      assert.equal(retry.attributes['http.response.status_code'], 200);
      assert.ok(!JSON.stringify(sink.spans).includes('not-in-spans'), 'no query string in any span');
      assert.ok(!JSON.stringify(sink.spans).includes('"fail"'), 'no payload in any span');
      assert.ok(
        receiver.requests.every((r) => r.headers.traceparent === undefined),
        'no traceparent for a partner by default',
      );
      const type = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
      assert.deepEqual([...sink.contentTypes], [type]);
    });

    it("carries the delivery's trace_id and span_id in its log lines", async () => {
      const ids = new Set(attemptsOf(deliveryId).map((s) => s.spanId));
      const lines = hp
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .filter((l) => l.msg === 'attempt finished' && l.deliveryId === deliveryId);
      assert.equal(lines.length, 2);
      for (const line of lines) {
        assert.equal(line.trace_id, original.traceId);
        assert.ok(ids.has(line.span_id), `span_id ${line.span_id} is one of the attempt spans`);
      }
    });

    it('a replay starts a new trace whose attempt links to the original', async () => {
      // The attempt's span is exported when it ends; its result is written up to 100 ms later
      // (completions.ts): until then the delivery is still queued and a replay is refused (409).
      await waitFor(
        'the delivery settled',
        async () => (await api('GET', `/v1/deliveries/${deliveryId}`)).body.status === 'delivered',
      );
      const replay = callerTrace();
      const res = await api('POST', `/v1/deliveries/${deliveryId}/replay`, undefined, {
        traceparent: replay.header,
      });
      assert.equal(res.status, 202);
      const span = (await waitFor('the replayed attempt span', () =>
        attemptsOf(deliveryId).find((s) => s.traceId === replay.traceId),
      ))!;
      const server = await spanNamed('POST /v1/deliveries/:id/replay', replay.traceId);
      assert.equal(server.parentSpanId, replay.spanId);
      assert.equal(span.parentSpanId, server.spanId);
      const enqueue = await spanNamed('POST /v1/deliveries', original.traceId);
      assert.deepEqual(span.links, [{ traceId: original.traceId, spanId: enqueue.spanId }]);
    });

    it('sends traceparent to a partner only when the endpoint sets propagate_trace', async () => {
      const created = await api('POST', '/v1/endpoints', { url: receiver.url, propagate_trace: true });
      assert.equal(created.body.propagate_trace, true);
      const off = await api('POST', '/v1/endpoints', { url: receiver.url });
      const patched = await api('PATCH', `/v1/endpoints/${off.body.id}`, { propagate_trace: true });
      assert.equal(patched.body.propagate_trace, true);
      assert.equal((await api('GET', `/v1/endpoints/${off.body.id}`)).body.propagate_trace, true);

      const caller = callerTrace();
      const enqueued = await api(
        'POST',
        '/v1/deliveries',
        { endpoint_id: created.body.id, event_type: 'order.created', payload: { n: 1 } },
        { traceparent: caller.header },
      );
      const arrived = (await waitFor('the delivery', () =>
        receiver.requests.find((r) => r.headers['webhook-id'] === enqueued.body.message_id),
      ))!;
      const span = (await waitFor('its span', () => attemptsOf(enqueued.body.deliveries[0].id)[0]))!;
      assert.equal(arrived.headers.traceparent, `00-${caller.traceId}-${span.spanId}-01`);
    });

    it('loaded the SDK (what the tracing-off test checks is absent)', async () => {
      await hp.stop();
      const loaded = loadedModules(hp.output());
      assert.ok(loaded.includes('@opentelemetry/sdk-trace-base'), `loaded: ${loaded.join(', ')}`);
    });
  });
}

describe('tracing off', () => {
  let db: TestDatabase;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  it('loads no module of the OpenTelemetry SDK, even while delivering', async () => {
    const { hp, api } = await startHookpost(db, {});
    try {
      const endpoint = await api('POST', '/v1/endpoints', { url: receiver.url, propagate_trace: true });
      const enqueued = await api(
        'POST',
        '/v1/deliveries',
        { endpoint_id: endpoint.body.id, event_type: 'x', payload: {} },
        { traceparent: callerTrace().header },
      );
      assert.equal(enqueued.status, 202);
      const arrived = (await waitFor('the delivery', () => receiver.requests[0]))!;
      assert.equal(arrived.headers.traceparent, undefined, 'nothing to propagate with tracing off');
      const [row] = await db.sql`SELECT traceparent FROM messages WHERE id = ${enqueued.body.message_id}`;
      assert.equal(row!.traceparent, null, 'nothing stored with tracing off');
    } finally {
      assert.equal(await hp.stop(), 0, hp.output());
    }
    // @opentelemetry/api alone is loaded, by prom-client (its process CPU metric), tracing or not.
    assert.deepEqual(
      loadedModules(hp.output()).filter((m) => m !== '@opentelemetry/api'),
      [],
    );
  });
});
