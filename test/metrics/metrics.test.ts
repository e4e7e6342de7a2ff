import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { refreshHealthPercentiles } from '../../src/endpoints/latency.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type HookpostMetrics } from '../../src/metrics/registry.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { type Exposition, parsePrometheusText } from './prom-text.js';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

/**
 * Known traffic, then exact numbers. Endpoints and what they answer:
 * ok 20 × 200; flaky 3 deliveries × (500, 500, 200); down 2 × 503 until dead (3 attempts);
 * rejecting 1 × 400 (dead at once); later 1 × 503 with Retry-After: 3600 (waits as `failed`);
 * slow 1 request held open by the test (in flight), then 200.
 */
const EXPECTED = { enqueued: 28, success: 24, retryable: 13, permanent: 1, dead: 3 };

describe('GET /metrics', () => {
  let db: TestDatabase;
  let metrics: HookpostMetrics;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher | undefined;
  const receivers: Receiver[] = [];
  const ids: Record<string, string> = {};
  const held: http.ServerResponse[] = [];

  before(async () => {
    db = await createTestDatabase();
    metrics = createMetrics({ sql: db.sql, log: createLogger('silent'), maxAgeMs: 0 });
    t = await createTestApp(db, {}, { metrics });
  });
  after(async () => {
    for (const res of held) res.writeHead(200).end();
    await dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function scrape(path = '/metrics', headers: Record<string, string> = {}): Promise<Exposition> {
    const res = await t.request(path, { headers });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(await res.text());
  }
  async function endpoint(name: string, handler?: Parameters<typeof startReceiver>[0]) {
    const receiver = await startReceiver(handler);
    receivers.push(receiver);
    ids[name] = (await createEndpoint(t, receiver)).id;
  }
  async function statusCounts(): Promise<Record<string, number>> {
    const rows = await db.sql<{ status: string; n: number }[]>`
      SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`;
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }
  async function attemptsInLog(): Promise<Record<string, number>> {
    const rows = await db.sql<{ outcome: string; n: number }[]>`
      SELECT outcome, count(*)::int AS n FROM delivery_attempts GROUP BY outcome`;
    return {
      success: 0,
      retryable: 0,
      permanent: 0,
      ...Object.fromEntries(rows.map((r) => [r.outcome, r.n])),
    };
  }
  const attempts = (m: Exposition, outcome: string) =>
    m.value('hookpost_delivery_attempts_total', { outcome });

  it('the test parser rejects what Prometheus would reject', () => {
    assert.throws(() => parsePrometheusText('# TYPE a counter\na{x="1} 1\n'));
    assert.throws(() => parsePrometheusText('# TYPE a counter\na 1\na 2\n'));
    assert.throws(() => parsePrometheusText('b 1\n'));
    assert.throws(() => parsePrometheusText('# TYPE a gauge\na one\n'));
    assert.equal(parsePrometheusText('# TYPE a gauge\na{x="q\\"r"} 1.5\n').value('a', { x: 'q"r' }), 1.5);
  });

  it('counts enqueues and refusals, and shows the backlog, before any dispatcher runs', async () => {
    const seen = new Map<string, number>();
    await endpoint('ok');
    await endpoint('flaky', (req, res) => {
      const id = String(req.headers['webhook-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      res.writeHead(seen.get(id)! <= 2 ? 500 : 200).end();
    });
    await endpoint('down', (_req, res) => res.writeHead(503).end());
    await endpoint('rejecting', (_req, res) => res.writeHead(400).end());
    await endpoint('later', (_req, res) => res.writeHead(503, { 'retry-after': '3600' }).end());
    await endpoint('slow', (_req, res) => held.push(res));

    const empty = await scrape();
    assert.equal(empty.value('hookpost_deliveries_enqueued_total'), 0);
    assert.equal(empty.value('hookpost_queue_depth', { status: 'pending' }), 0);
    assert.equal(empty.value('hookpost_oldest_pending_age_seconds'), 0);

    await enqueueMany(t.send, ids.ok!, 19);
    const single = { endpoint_id: ids.ok, event_type: 'x', payload: { i: 19 } };
    assert.equal((await t.send('POST', '/v1/deliveries', single, { 'idempotency-key': 'k1' })).status, 202);
    // A repeat with the same key queues nothing and must not count.
    assert.equal((await t.send('POST', '/v1/deliveries', single, { 'idempotency-key': 'k1' })).status, 200);
    await enqueueMany(t.send, ids.flaky!, 3);
    await enqueueMany(t.send, ids.down!, 2);
    for (const name of ['rejecting', 'later', 'slow']) await enqueueMany(t.send, ids[name]!, 1);
    assert.equal((await t.send('POST', '/v1/deliveries', { event_type: 'x' })).status, 400);
    const unknown = { endpoint_id: 'ep_nope', event_type: 'x', payload: {} };
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items: [unknown] })).status, 404);

    const m = await scrape();
    assert.equal(m.value('hookpost_deliveries_enqueued_total'), EXPECTED.enqueued);
    assert.equal(m.value('hookpost_enqueue_rejected_total', { reason: 'validation_failed' }), 1);
    assert.equal(m.value('hookpost_enqueue_rejected_total', { reason: 'endpoint_not_found' }), 1);
    assert.equal(m.value('hookpost_enqueue_rejected_total', { reason: 'backlog_full' }), 0);
    assert.equal(m.value('hookpost_queue_depth', { status: 'pending' }), EXPECTED.enqueued);
    assert.equal(m.value('hookpost_queue_depth', { status: 'failed' }), 0);
    assert.equal(m.value('hookpost_queue_depth', { status: 'in_flight' }), 0);
    const age = m.value('hookpost_oldest_pending_age_seconds')!;
    assert.ok(age > 0 && age < 60, `oldest pending age ${age}`);
    assert.equal(m.series('hookpost_circuit_state').length, 6);
    for (const id of Object.values(ids)) assert.equal(m.value('hookpost_circuit_state', { endpoint: id }), 0);
    for (const outcome of ['success', 'retryable', 'permanent']) assert.equal(attempts(m, outcome), 0);
    assert.ok(m.types.get('process_cpu_user_seconds_total'), 'default process metrics are there');
    assert.ok(m.value('nodejs_heap_size_used_bytes')! > 0);
  });

  it('after the traffic: attempts by outcome, dead letters, lag, in-flight and retry-waiting', async () => {
    dispatcher = await startTestDispatcher(db, { HOOKPOST_MAX_ATTEMPTS: '3' }, { metrics });
    await waitFor('everything but the held request to settle', async () => {
      const s = await statusCounts();
      return s.delivered === 23 && s.dead_letter === 3 && s.failed === 1 && held.length === 1;
    });
    const logged = await attemptsInLog();
    assert.deepEqual(logged, { success: 23, retryable: EXPECTED.retryable, permanent: EXPECTED.permanent });
    // Metrics move right after the batch commits; give the counter that moment.
    await waitFor('the counters to catch up', async () => attempts(await scrape(), 'success') === 23, 2000);

    const m = await scrape();
    assert.equal(attempts(m, 'success'), 23);
    assert.equal(attempts(m, 'retryable'), EXPECTED.retryable);
    assert.equal(attempts(m, 'permanent'), EXPECTED.permanent);
    assert.equal(m.value('hookpost_dead_letters_total'), EXPECTED.dead);
    assert.equal(m.value('hookpost_queue_depth', { status: 'pending' }), 0);
    assert.equal(m.value('hookpost_queue_depth', { status: 'failed' }), 1, 'the Retry-After one waits');
    assert.equal(m.value('hookpost_queue_depth', { status: 'in_flight' }), 1, 'the held one');
    assert.equal(m.value('hookpost_delivery_attempt_duration_seconds_count'), 23 + 13 + 1);
    assert.equal(m.value('hookpost_delivery_lag_seconds_count'), 23);

    held.shift()!.writeHead(200).end();
    await waitFor('the held delivery', async () => (await statusCounts()).delivered === 24);
    await waitFor('its metrics', async () => attempts(await scrape(), 'success') === EXPECTED.success, 2000);
    const final = await scrape();
    assert.equal(final.value('hookpost_deliveries_enqueued_total'), EXPECTED.enqueued);
    assert.equal(final.value('hookpost_queue_depth', { status: 'in_flight' }), 0);
    assert.equal(final.value('hookpost_queue_depth', { status: 'pending' }), 0);
    assert.equal(final.value('hookpost_queue_depth', { status: 'failed' }), 1);
    const total = EXPECTED.success + EXPECTED.retryable + EXPECTED.permanent;
    assert.equal(final.value('hookpost_delivery_attempt_duration_seconds_count'), total);
    assert.equal(final.value('hookpost_delivery_attempt_duration_seconds_bucket', { le: '+Inf' }), total);
    const lagCount = final.value('hookpost_delivery_lag_seconds_count')!;
    assert.equal(lagCount, EXPECTED.success);
    const lagSum = final.value('hookpost_delivery_lag_seconds_sum')!;
    assert.ok(lagSum > 0 && lagSum / lagCount < 60, `mean lag ${lagSum / lagCount}`);
    const buckets = final.series('hookpost_delivery_lag_seconds_bucket').map((s) => s.value);
    assert.deepEqual(
      buckets,
      [...buckets].sort((a, b) => a - b),
      'cumulative buckets never decrease',
    );
    // The one still waiting is the Retry-After delivery, enqueued at the start of this file.
    const [later] = await db.sql<{ age: number }[]>`
      SELECT extract(epoch FROM now() - created_at)::float8 AS age FROM deliveries WHERE status = 'failed'`;
    assert.ok(Math.abs(final.value('hookpost_oldest_pending_age_seconds')! - later!.age) < 2);
  });

  it('shows circuit states and the p95 of endpoints with enough samples', async () => {
    await refreshHealthPercentiles(db.sql);
    await db.sql`UPDATE endpoint_health SET state = 'open' WHERE endpoint_id = ${ids.down!}`;
    await db.sql`UPDATE endpoint_health SET state = 'half_open' WHERE endpoint_id = ${ids.later!}`;
    const m = await scrape();
    assert.equal(m.value('hookpost_circuit_state', { endpoint: ids.down! }), 2);
    assert.equal(m.value('hookpost_circuit_state', { endpoint: ids.later! }), 1);
    assert.equal(m.value('hookpost_circuit_state', { endpoint: ids.ok! }), 0);
    const [health] = await db.sql<{ p95_ms: number }[]>`
      SELECT p95_ms FROM endpoint_health WHERE endpoint_id = ${ids.ok!}`;
    assert.equal(
      m.value('hookpost_endpoint_latency_p95_seconds', { endpoint: ids.ok! }),
      health!.p95_ms / 1000,
    );
    // 9 samples are too few to mean anything: no series rather than a misleading one.
    assert.equal(m.value('hookpost_endpoint_latency_p95_seconds', { endpoint: ids.flaky! }), undefined);
    assert.equal(m.series('hookpost_endpoint_latency_p95_seconds').length, 1);

    await t.send('DELETE', `/v1/endpoints/${ids.rejecting!}`);
    const after = await scrape();
    assert.equal(after.value('hookpost_circuit_state', { endpoint: ids.rejecting! }), undefined);
    assert.equal(after.series('hookpost_circuit_state').length, 5);
  });

  it('reuses one snapshot for HOOKPOST_METRICS_CACHE_SECONDS', async () => {
    const cached = createMetrics({ sql: db.sql, log: createLogger('silent'), maxAgeMs: 60_000 });
    const read = async (m: HookpostMetrics) =>
      parsePrometheusText(await m.registry.metrics()).value('hookpost_queue_depth', { status: 'pending' });
    await t.send('PATCH', `/v1/endpoints/${ids.ok!}`, { enabled: false });
    const before = await read(cached);
    await enqueueMany(t.send, ids.ok!, 5); // parked: the endpoint is disabled
    assert.equal(await read(cached), before, 'served from the cached snapshot');
    assert.equal(await read(metrics), before! + 5, 'an uncached registry sees the new rows');
  });

  it('takes a bearer token when HOOKPOST_METRICS_TOKEN is set', async () => {
    const token = 'metrics-token-0123456789';
    const guarded = await createTestApp(db, { HOOKPOST_METRICS_TOKEN: token });
    const refused = await guarded.request('/metrics');
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).error.code, 'unauthorized');
    const wrong = await guarded.request('/metrics', { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.status, 401);
    const ok = await guarded.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.status, 200);
    assert.ok(parsePrometheusText(await ok.text()).types.has('hookpost_queue_depth'));
    assert.equal((await t.request('/metrics')).status, 200, 'open by default');
  });
});
