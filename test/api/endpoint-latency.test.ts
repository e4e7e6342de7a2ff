/** GET /v1/endpoints/{id}/latency: per-step percentiles from the per-minute histograms. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BUCKET_BOUNDS_MS, BUCKET_COUNT, bucketIndex } from '../../src/endpoints/latency.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('endpoint latency series', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let id: string;
  let other: string;

  async function minute(endpointId: string, minutesAgo: number, samples: Record<number, number>) {
    const buckets = new Array(BUCKET_COUNT).fill(0);
    for (const [ms, n] of Object.entries(samples)) buckets[bucketIndex(Number(ms))] += n;
    await db.sql`
      INSERT INTO endpoint_latency_minutes (endpoint_id, minute, buckets)
      VALUES (${endpointId}, date_trunc('hour', now()) - make_interval(mins => ${minutesAgo}), ${buckets})`;
  }

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    id = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/a' })).json()).id;
    other = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/b' })).json()).id;
    // Two minutes in one hour-long step (the step's histogram is their sum), one in another hour,
    // one older than the window, and another endpoint's minute that must not leak in.
    await minute(id, 120, { 10: 50 });
    await minute(id, 100, { 10: 40, 1000: 10 });
    await minute(id, 60, { 200: 5 });
    await minute(id, 25 * 60, { 5000: 100 });
    await minute(other, 120, { 3000: 100 });
  });
  after(() => db.drop());

  it('sums the minutes of each step and summarises them, oldest first', async () => {
    const res = await t.send('GET', `/v1/endpoints/${id}/latency?hours=24&step_minutes=60`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.step_minutes, 60);
    assert.equal(body.hours, 24);
    assert.deepEqual(
      body.points.map((p: { sample_count: number }) => p.sample_count),
      [100, 5],
    );
    const [first, second] = body.points;
    assert.ok(Date.parse(first.at) < Date.parse(second.at));
    // 90 of 100 samples near 10 ms, 10 near 1 s: p50 is in the 10 ms bucket, p95 and p99 near 1 s.
    const bucketOf = (ms: number) => BUCKET_BOUNDS_MS[bucketIndex(ms)]!;
    assert.ok(first.p50_ms <= bucketOf(10), `p50 ${first.p50_ms}`);
    assert.ok(first.p95_ms > 700 && first.p95_ms <= bucketOf(1000), `p95 ${first.p95_ms}`);
    assert.ok(second.p50_ms > 150 && second.p50_ms <= bucketOf(200), `p50 ${second.p50_ms}`);
  });

  it('defaults to 24 h in about 96 steps', async () => {
    const body = await (await t.send('GET', `/v1/endpoints/${id}/latency`)).json();
    assert.equal(body.step_minutes, 15);
    assert.equal(body.points.length, 3, 'three minutes in three different 15-minute steps');
  });

  it('answers 404 for an unknown endpoint and 400 for a bad window', async () => {
    const missing = await t.send('GET', '/v1/endpoints/ep_nope/latency');
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'endpoint_not_found');
    for (const query of ['hours=0', 'hours=25', 'hours=x', 'step_minutes=0', 'step_minutes=1.5']) {
      const res = await t.send('GET', `/v1/endpoints/${id}/latency?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal((await res.json()).error.code, 'validation_failed');
    }
  });
});
