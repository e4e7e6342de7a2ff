/**
 * GET /v1/endpoints/slow sums 24 h of latency minutes per call: a tenant-bound key's call sums its
 * own tenant's endpoints only (the other tenants' minutes are never read), and the all-tenant
 * view is summed once per 30 s per process, whoever asks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BUCKET_COUNT, bucketIndex } from '../../src/endpoints/latency.js';
import { AllEndpointsLatencyWindow, tenantLatencyWindowQuery } from '../../src/endpoints/slow-endpoints.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type TestDatabase,
} from '../helpers.js';

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function scans(node: PlanNode): PlanNode[] {
  return [...(node['Relation Name'] ? [node] : []), ...(node.Plans ?? []).flatMap(scans)];
}

describe('slow endpoints', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let own: string;
  let others: string[];

  /** `count` minutes of the endpoint in the last hours, each with `samples` attempts of `ms`. */
  async function minutes(endpointId: string, count: number, ms: number, samples: number) {
    const buckets = new Array(BUCKET_COUNT).fill(0);
    buckets[bucketIndex(ms)] = samples;
    await db.sql`
      INSERT INTO endpoint_latency_minutes (endpoint_id, minute, buckets)
      SELECT ${endpointId}, date_trunc('minute', now()) - make_interval(mins => g), ${buckets}
      FROM generate_series(1, ${count}::int) g`;
  }

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    own = (await createEndpoint(t, 'http://127.0.0.1:9/own', { tenant_id: 'tenant_a' })).id;
    others = [];
    for (let n = 0; n < 5; n++)
      others.push((await createEndpoint(t, `http://127.0.0.1:9/o${n}`, { tenant_id: 'tenant_b' })).id);
    await minutes(own, 30, 3000, 2);
    for (const id of others) await minutes(id, 600, 5000, 2);
    await db.sql`ANALYZE endpoint_latency_minutes`;
  });
  after(() => db.drop());

  it("a tenant's call reads its own endpoints' minutes and no other tenant's", async () => {
    const [row] = await db.sql`EXPLAIN (ANALYZE, FORMAT JSON) ${tenantLatencyWindowQuery(db.sql, {
      tenantId: 'tenant_a',
      operations: false,
    })}`;
    const plan = (row!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
    const read = scans(plan).filter((n) => n['Relation Name'] === 'endpoint_latency_minutes');
    const rows = read.reduce(
      (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
      0,
    );
    assert.equal(
      rows,
      30,
      `the 30 minutes of its endpoint, not the 3000 of tenant_b: ${JSON.stringify(plan)}`,
    );
  });

  it("answers from its own endpoints even when another tenant's minutes cannot be summed", async () => {
    // Sums past 2^31 samples make the statement fail where it reads them (integer out of range):
    // the tenant's call never does.
    const poison = (await createEndpoint(t, 'http://127.0.0.1:9/poison', { tenant_id: 'tenant_b' })).id;
    await minutes(poison, 2, 1000, 2_000_000_000);
    try {
      const a = await keySender(t, { scopes: ['endpoints:read'], tenant_id: 'tenant_a' });
      const res = await a.send('GET', '/v1/endpoints/slow?p95_ms=1000');
      assert.equal(res.status, 200);
      assert.deepEqual(
        (await res.json()).data.map((e: { endpoint_id: string }) => e.endpoint_id),
        [own],
      );
    } finally {
      await db.sql`DELETE FROM endpoint_latency_minutes WHERE endpoint_id = ${poison}`;
    }
  });

  it('the all-tenant view lists every tenant, summed once per 30 s however many ask', async () => {
    const res = await t.send('GET', '/v1/endpoints/slow?p95_ms=1000');
    assert.equal(res.status, 200);
    const listed = (await res.json()).data.map((e: { endpoint_id: string }) => e.endpoint_id);
    assert.deepEqual(new Set(listed), new Set([own, ...others]));

    let now = 0;
    let statements = 0;
    const counting = new Proxy(db.sql, {
      apply(target, self, args) {
        // Each statement, not the fragments it is built from.
        if ((args[0] as string[]).join('').includes('FROM endpoint_latency_minutes')) statements++;
        return Reflect.apply(target, self, args);
      },
    });
    const window = new AllEndpointsLatencyWindow(counting, 30_000, () => now);
    const [first, second] = await Promise.all([window.get(), window.get()]);
    assert.equal(first, second);
    now = 29_999;
    assert.equal(await window.get(), first, 'served from the cache within 30 s');
    assert.equal(statements, 1);
    now = 30_000;
    const fresh = await window.get();
    assert.notEqual(fresh, first);
    assert.equal(statements, 2, 'summed again once 30 s have passed');
    assert.equal(fresh.size, 1 + others.length);
  });
});
