/**
 * A fan-out that reaches no endpoint is visible: the enqueue answer says so (`unrouted`, a
 * `warning`), hookpost_messages_unrouted_total counts it once (not again for a repeated request),
 * and GET /v1/pipeline shows the last hour's count within the caller's tenant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { createMetrics, type HookpostMetrics } from '../../src/metrics/registry.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type TestDatabase,
} from '../helpers.js';
import { parsePrometheusText } from '../metrics/prom-text.js';

describe('unrouted fan-outs', () => {
  let db: TestDatabase;
  let metrics: HookpostMetrics;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  const unroutedTotal = async () =>
    parsePrometheusText(await (await t.request('/metrics')).text()).value('hookpost_messages_unrouted_total');
  const pipeline = async (send = t.send) =>
    (await (await send('GET', '/v1/pipeline')).json()).unrouted_last_hour;

  before(async () => {
    db = await createTestDatabase();
    metrics = createMetrics({ sql: db.sql, log: createLogger('silent'), maxAgeMs: 0 });
    t = await createTestApp(db, {}, { metrics });
    await createEndpoint(t, 'http://127.0.0.1:9/hook', { tenant_id: 'shop', event_types: ['order.*'] });
  });
  after(() => db.drop());

  it('answers 202 with unrouted and a warning when no endpoint subscribes', async () => {
    assert.equal(await unroutedTotal(), 0, 'the counter exists from the start');
    const res = await t.send('POST', '/v1/deliveries', {
      tenant_id: 'shop',
      event_type: 'invoice.paid',
      payload: { n: 1 },
    });
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.deepEqual(body.deliveries, []);
    assert.equal(body.unrouted, true);
    assert.equal(
      body.warning,
      'no endpoint of tenant shop subscribes to invoice.paid: nothing will be delivered',
    );
    assert.equal(await unroutedTotal(), 1);
    assert.equal(await pipeline(), 1);
  });

  it('marks only the unrouted items of a batch, and a routed or explicit one never', async () => {
    const res = await t.send('POST', '/v1/deliveries/batch', {
      items: [
        { tenant_id: 'shop', event_type: 'order.created', payload: { n: 2 } },
        { tenant_id: 'shop', event_type: 'refund.issued', payload: { n: 3 } },
        { tenant_id: 'other', event_type: 'order.created', payload: { n: 4 } },
      ],
    });
    assert.equal(res.status, 202);
    const { results } = await res.json();
    assert.deepEqual(
      results.map((r: { unrouted?: boolean }) => r.unrouted ?? false),
      [false, true, true],
    );
    assert.equal(results[0].deliveries.length, 1);
    assert.equal('warning' in results[0], false);
    assert.equal(await unroutedTotal(), 3);
    assert.equal(await pipeline(), 3);
  });

  it('says so again for a repeated request, without counting it twice', async () => {
    const first = await t.send(
      'POST',
      '/v1/deliveries',
      { tenant_id: 'shop', event_type: 'invoice.paid', payload: { n: 5 } },
      { 'idempotency-key': 'k-1' },
    );
    assert.equal(first.status, 202);
    const again = await t.send(
      'POST',
      '/v1/deliveries',
      { tenant_id: 'shop', event_type: 'invoice.paid', payload: { n: 5 } },
      { 'idempotency-key': 'k-1' },
    );
    assert.equal(again.status, 200);
    assert.equal((await again.json()).unrouted, true);
    assert.equal(await unroutedTotal(), 4);
    assert.equal(await pipeline(), 4);
  });

  it("shows a tenant-bound key its own tenant's count only", async () => {
    const shop = await keySender(t, { scopes: ['deliveries:read'], tenant_id: 'shop' });
    const other = await keySender(t, { scopes: ['deliveries:read'], tenant_id: 'other' });
    assert.equal(await pipeline(shop.send), 3);
    assert.equal(await pipeline(other.send), 1);
    assert.equal((await (await t.send('GET', '/v1/pipeline?tenant_id=other')).json()).unrouted_last_hour, 1);
  });

  it('counts only the last hour, and drops rows older than a day at the next write', async () => {
    await db.sql`UPDATE unrouted_counts SET at = now() - interval '2 hours' WHERE tenant_id = 'other'`;
    assert.equal(await pipeline(), 3);
    await db.sql`UPDATE unrouted_counts SET at = now() - interval '26 hours' WHERE tenant_id = 'other'`;
    await t.send('POST', '/v1/deliveries', { tenant_id: 'shop', event_type: 'nobody.listens', payload: {} });
    const [row] = await db.sql<{ old: number }[]>`
      SELECT count(*)::int AS old FROM unrouted_counts WHERE tenant_id = 'other'`;
    assert.equal(row?.old, 0);
    assert.equal(await pipeline(), 4);
  });
});
