/**
 * Content filters at enqueue: a payload that does not match creates no delivery for that endpoint,
 * for a fan-out across many endpoints and for a named endpoint_id, in single and batch requests,
 * keyed or not, and the response lists the endpoint in `filtered`. Replays are not re-filtered,
 * test events are not filtered, operational events are, and payloads jsonb cannot take are.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../../src/metrics/registry.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('filters at enqueue', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  const metrics = createMetrics();
  const deliveriesOf = async (messageId: string) =>
    (
      await db.sql<{ endpoint_id: string }[]>`
        SELECT endpoint_id FROM deliveries WHERE message_id = ${messageId} ORDER BY endpoint_id`
    ).map((r) => r.endpoint_id);
  const queuedOf = async (messageId: string) =>
    (
      await db.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM delivery_queue WHERE message_id = ${messageId}`
    )[0]!.n;
  const filteredMetric = async (target: string) =>
    (await metrics.deliveriesFiltered.get()).values.find((v) => v.labels.target === target)?.value ?? 0;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, {}, { metrics });
  });
  after(() => db.drop());

  it('a fan-out across 80 filtered endpoints reaches exactly those whose filters match, the rest listed as filtered', async () => {
    // Endpoint k (k = 0..79) of tenant "shop" wants orders of at least k; every fourth also only EUR.
    const endpoints: { id: string; min: number; eurOnly: boolean }[] = [];
    for (let k = 0; k < 80; k++) {
      const eurOnly = k % 4 === 0;
      const filter = eurOnly
        ? { data: { amount: { $gte: k }, currency: 'EUR' } }
        : { data: { amount: { $gte: k } } };
      const ep = await createEndpoint(t, `https://shop${k}.example/`, {
        tenant_id: 'shop',
        event_types: ['order.*'],
        filter,
      });
      endpoints.push({ id: ep.id, min: k, eurOnly });
    }
    const plain = await createEndpoint(t, 'https://plain.example/', { tenant_id: 'shop' });
    // Another tenant's endpoint with a filter that would match: never a target of shop's fan-out.
    await createEndpoint(t, 'https://other.example/', {
      tenant_id: 'other',
      filter: { data: { amount: 40 } },
    });

    const payloads = [
      { data: { amount: 40, currency: 'USD' } },
      { data: { amount: 79, currency: 'EUR' } },
      { data: { amount: -1, currency: 'EUR' } },
      { data: { currency: 'EUR' } },
      { order: 'no data at all' },
    ];
    const res = await t.send('POST', '/v1/deliveries/batch', {
      items: payloads.map((payload) => ({ tenant_id: 'shop', event_type: 'order.created', payload })),
    });
    assert.equal(res.status, 202);
    const { results } = await res.json();
    for (const [i, payload] of payloads.entries()) {
      const data = (payload as { data?: { amount?: number; currency?: string } }).data;
      const wanted = endpoints
        .filter(
          (e) =>
            data?.amount !== undefined && data.amount >= e.min && (!e.eurOnly || data.currency === 'EUR'),
        )
        .map((e) => e.id);
      const expected = [...wanted, plain.id].sort();
      assert.deepEqual(await deliveriesOf(results[i].message_id), expected, `payload ${i}`);
      assert.equal(await queuedOf(results[i].message_id), expected.length);
      assert.deepEqual(
        results[i].deliveries.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
        expected,
      );
      const filtered = endpoints.map((e) => e.id).filter((id) => !wanted.includes(id));
      assert.deepEqual([...results[i].filtered].sort(), filtered.sort(), `payload ${i} filtered`);
    }
    // 40 USD: endpoints 0..40 minus the EUR-only ones among them (0, 4, …, 40: 11) = 30 receive.
    assert.equal(results[0].deliveries.length, 30 + 1);
  });

  it('a fan-out whose every subscriber filtered it out is not unrouted', async () => {
    const ep = await createEndpoint(t, 'https://only.example/', {
      tenant_id: 'picky',
      filter: { wanted: true },
    });
    const res = await (
      await t.send('POST', '/v1/deliveries', {
        tenant_id: 'picky',
        event_type: 'x',
        payload: { wanted: false },
      })
    ).json();
    assert.deepEqual(res.deliveries, []);
    assert.deepEqual(res.filtered, [ep.id]);
    assert.equal(res.unrouted, undefined);
    const nobody = await (
      await t.send('POST', '/v1/deliveries', { tenant_id: 'nobody', event_type: 'x', payload: {} })
    ).json();
    assert.equal(nobody.unrouted, true, 'a tenant without endpoints still is');
  });

  it('a named endpoint_id is filtered too: no delivery, the message kept, the endpoint in filtered', async () => {
    const ep = await createEndpoint(t, 'https://named.example/', { filter: { type: 'order.paid' } });
    const before = await filteredMetric('endpoint');
    const miss = await t.send('POST', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'x',
      payload: { type: 'order.created' },
    });
    assert.equal(miss.status, 202);
    const missed = await miss.json();
    assert.deepEqual(missed.deliveries, []);
    assert.deepEqual(missed.filtered, [ep.id]);
    assert.deepEqual(await deliveriesOf(missed.message_id), []);
    const [message] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE id = ${missed.message_id}`;
    assert.equal(message!.n, 1);
    assert.equal(await filteredMetric('endpoint'), before + 1);

    const hit = await (
      await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'x',
        payload: { type: 'order.paid' },
      })
    ).json();
    assert.equal(hit.deliveries.length, 1);
    assert.deepEqual(hit.filtered, []);
    assert.deepEqual(await deliveriesOf(hit.message_id), [ep.id]);
  });

  it('a batch of named endpoints, some filtered (the one-count statement), keeps item order', async () => {
    const even = await createEndpoint(t, 'https://even.example/', {
      filter: { n: { $in: [0, 2, 4, 6, 8] } },
    });
    const all = await createEndpoint(t, 'https://all.example/');
    const items = Array.from({ length: 10 }, (_, n) => ({
      endpoint_id: n % 2 === 0 ? all.id : even.id,
      event_type: 'x',
      payload: { n: n % 4 === 1 ? n - 1 : n },
    }));
    const { results } = await (await t.send('POST', '/v1/deliveries/batch', { items })).json();
    // Items to `even` are n = 1, 3, 5, 7, 9 with payloads 0, 3, 4, 7, 8: 0, 4, 8 pass.
    const expected = items.map((item) =>
      item.endpoint_id === all.id || [0, 4, 8].includes(item.payload.n) ? [item.endpoint_id] : [],
    );
    for (const [i, r] of results.entries()) {
      assert.deepEqual(
        r.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id),
        expected[i],
      );
      assert.deepEqual(r.filtered, expected[i]!.length ? [] : [even.id]);
      assert.deepEqual(await deliveriesOf(r.message_id), expected[i]);
    }
  });

  it('numbers ordering keys only among the deliveries a filter let through', async () => {
    const ep = await createEndpoint(t, 'https://keyed.example/', { filter: { ok: true } });
    const items = [true, false, true, false, true].map((ok) => ({
      endpoint_id: ep.id,
      event_type: 'x',
      ordering_key: 'k',
      payload: { ok },
    }));
    const { results } = await (await t.send('POST', '/v1/deliveries/batch', { items })).json();
    assert.deepEqual(
      results.map((r: { deliveries: unknown[] }) => r.deliveries.length),
      [1, 0, 1, 0, 1],
    );
    const sequences = await db.sql<{ sequence: string }[]>`
      SELECT sequence FROM deliveries WHERE endpoint_id = ${ep.id} ORDER BY sequence`;
    assert.deepEqual(
      sequences.map((r) => Number(r.sequence)),
      [1, 2, 3],
    );
  });

  it('a repeated request answers with the original ids and queues nothing', async () => {
    const ep = await createEndpoint(t, 'https://idem.example/', { filter: { a: 1 } });
    const send = () =>
      t.send(
        'POST',
        '/v1/deliveries/batch',
        { items: [1, 2].map((a) => ({ endpoint_id: ep.id, event_type: 'x', payload: { a } })) },
        { 'idempotency-key': 'filters-once' },
      );
    const first = await (await send()).json();
    const again = await send();
    assert.equal(again.status, 200);
    const second = await again.json();
    assert.deepEqual(
      second.results.map((r: { message_id: string }) => r.message_id),
      first.results.map((r: { message_id: string }) => r.message_id),
    );
    assert.deepEqual(second.results[0].deliveries, first.results[0].deliveries);
    assert.deepEqual(first.results[1].filtered, [ep.id]);
    const [n] = await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${ep.id}`;
    assert.equal(n!.n, 1);
  });

  it('a payload jsonb refuses (NUL, lone surrogate) is filtered as U+FFFD and stored byte for byte', async () => {
    const ep = await createEndpoint(t, 'https://odd.example/', { filter: { kind: 'a' } });
    const raw = '{"kind":"a","note":"x\\u0000y\\udc00z\\ud83d\\ude00"}';
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${ep.id}","event_type":"x","payload":${raw}}`,
    );
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.equal(body.deliveries.length, 1);
    const [row] = await db.sql<
      { payload: Buffer }[]
    >`SELECT payload FROM messages WHERE id = ${body.message_id}`;
    assert.equal(row!.payload.toString('utf8'), raw);
    const other = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${ep.id}","event_type":"x","payload":{"kind":"b\\u0000"}}`,
    );
    assert.deepEqual((await other.json()).filtered, [ep.id]);
  });

  it('a payload nested 512 levels deep is filtered like any other', async () => {
    const ep = await createEndpoint(t, 'https://deep.example/', { filter: { kind: 'deep' } });
    const deep = `${'['.repeat(510)}1${']'.repeat(510)}`;
    for (const [kind, delivered] of [
      ['deep', 1],
      ['flat', 0],
    ] as const) {
      const res = await t.send(
        'POST',
        '/v1/deliveries',
        `{"endpoint_id":"${ep.id}","event_type":"x","payload":{"kind":"${kind}","n":${deep}}}`,
      );
      assert.equal(res.status, 202);
      assert.equal((await res.json()).deliveries.length, delivered);
    }
  });

  it('the test event is sent whatever the filter', async () => {
    const ep = await createEndpoint(t, 'https://tested.example/', { filter: { never: { $exist: true } } });
    const res = await t.send('POST', `/v1/endpoints/${ep.id}/test-event`);
    assert.equal(res.status, 202);
    assert.equal((await res.json()).deliveries.length, 1);
  });

  it('operational events reach only the operators whose filter they match', async () => {
    const acme = await createEndpoint(t, 'https://ops-acme.example/', {
      tenant_id: 'hookpost',
      filter: { data: { tenant_id: 'acme' } },
    });
    const others = await createEndpoint(t, 'https://ops-others.example/', {
      tenant_id: 'hookpost',
      filter: { data: { tenant_id: { $neq: 'acme' } } },
    });
    const watched = await createEndpoint(t, 'https://acme.example/', { tenant_id: 'acme' });
    assert.equal((await t.send('PATCH', `/v1/endpoints/${watched.id}`, { enabled: false })).status, 200);
    const rows = await db.sql<{ endpoint_id: string }[]>`
      SELECT d.endpoint_id FROM deliveries d JOIN messages m ON m.id = d.message_id
      WHERE m.tenant_id = 'hookpost' AND m.event_type = 'endpoint.disabled'
        AND convert_from(m.payload, 'UTF8')::jsonb #>> '{data,endpoint_id}' = ${watched.id}`;
    assert.deepEqual(
      rows.map((r) => r.endpoint_id),
      [acme.id],
    );
    assert.notEqual(acme.id, others.id);
    await db.sql`UPDATE endpoints SET deleted_at = now() WHERE tenant_id = 'hookpost'`;
  });

  describe('with a dispatcher and a receiver', () => {
    let receiver: Receiver;
    let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
    let refuse = true;
    before(async () => {
      receiver = await startReceiver((_req, res) => res.writeHead(refuse ? 400 : 200).end());
      dispatcher = await startTestDispatcher(db);
    });
    after(async () => {
      await dispatcher.stop();
      await receiver.close();
    });

    it('a replay is not filtered again, even after the filter changed', async () => {
      const ep = await createEndpoint(t, receiver, { filter: { ok: true } });
      const sent = await (
        await t.send('POST', '/v1/deliveries', { endpoint_id: ep.id, event_type: 'x', payload: { ok: true } })
      ).json();
      const id = sent.deliveries[0].id as string;
      await waitFor('the 400 to dead-letter it', async () => {
        const [row] = await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ${id}`;
        return row!.status === 'dead_letter';
      });
      await t.send('PATCH', `/v1/endpoints/${ep.id}`, { filter: { ok: false } });
      refuse = false;
      assert.equal((await t.send('POST', `/v1/deliveries/${id}/replay`)).status, 202);
      await waitFor('the replayed delivery', async () => {
        const [row] = await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ${id}`;
        return row!.status === 'delivered';
      });
      assert.equal(receiver.requests.filter((r) => r.headers['webhook-id'] === sent.message_id).length, 2);
    });
  });
});
