import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('/v1/deliveries (enqueue)', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let endpointId: string;
  const count = async (table: string) =>
    Number((await db.sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n);

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_MAX_PAYLOAD_BYTES: '1000' });
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'https://one.example/' })).json()).id;
  });
  after(() => db.drop());

  it('queues one delivery and stores the payload byte for byte', async () => {
    const raw =
      '{"endpoint_id":"EP","event_type":"order.created","payload":{ "amount": 1.50, "note":"caf\\u00e9 ☕" }}';
    const res = await t.send('POST', '/v1/deliveries', raw.replace('EP', endpointId));
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.match(body.message_id, /^msg_/);
    assert.equal(body.deliveries.length, 1);
    assert.equal(body.deliveries[0].endpoint_id, endpointId);
    assert.equal(body.deliveries[0].status, 'pending');
    const [row] = await db.sql<
      { payload: Buffer }[]
    >`SELECT payload FROM messages WHERE id = ${body.message_id}`;
    assert.equal(row!.payload.toString('utf8'), '{ "amount": 1.50, "note":"caf\\u00e9 ☕" }');

    const one = await (await t.send('GET', `/v1/deliveries/${body.deliveries[0].id}`)).json();
    assert.equal(one.status, 'pending');
    assert.equal(one.event_type, 'order.created');
    assert.deepEqual(one.attempts, []);
    assert.deepEqual(one.payload, { amount: 1.5, note: 'café ☕' });
  });

  it('rejects bad requests with the right status and nothing written', async () => {
    const before = await count('messages');
    const big = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: 'a'.repeat(1200),
    });
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, 'payload_too_large');
    const text = await t.send('POST', '/v1/deliveries', 'hello', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    const unknown = await t.send('POST', '/v1/deliveries', {
      endpoint_id: 'ep_missing',
      event_type: 'x',
      payload: {},
    });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, 'endpoint_not_found');
    const noType = await t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, payload: {} });
    assert.equal(noType.status, 400);
    assert.match((await noType.json()).error.message, /^event_type: /);
    const noPayload = await t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, event_type: 'x' });
    assert.match((await noPayload.json()).error.message, /^payload: /);
    const noAuth = await t.request('/v1/deliveries', { method: 'POST', body: '{}' });
    assert.equal(noAuth.status, 401);
    assert.equal(await count('messages'), before);
  });

  it('makes racing requests with one Idempotency-Key create exactly one message', async () => {
    const body = { endpoint_id: endpointId, event_type: 'invoice.paid', payload: { n: 1 } };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.send('POST', '/v1/deliveries', body, { 'idempotency-key': 'race-1' }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 202]);
    const bodies = await Promise.all(responses.map((r) => r.json()));
    assert.equal(new Set(bodies.map((b) => b.message_id)).size, 1);
    assert.equal(new Set(bodies.map((b) => b.deliveries[0].id)).size, 1);
    const [m] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE idempotency_key = 'race-1'`;
    assert.equal(m!.n, 1);
    const [d] = await db.sql`
      SELECT count(*)::int AS n FROM deliveries WHERE message_id = ${bodies[0].message_id}`;
    assert.equal(d!.n, 1);

    const conflict = await t.send(
      'POST',
      '/v1/deliveries',
      { ...body, payload: { n: 2 } },
      { 'idempotency-key': 'race-1' },
    );
    assert.equal(conflict.status, 409);
    assert.equal((await conflict.json()).error.code, 'idempotency_conflict');
  });

  it('treats a repeated event_id like an idempotency key', async () => {
    const body = {
      endpoint_id: endpointId,
      event_type: 'user.created',
      event_id: 'evt_1',
      payload: { id: 1 },
    };
    const first = await t.send('POST', '/v1/deliveries', body);
    const second = await t.send('POST', '/v1/deliveries', body);
    assert.equal(first.status, 202);
    assert.equal(second.status, 200);
    assert.equal((await first.json()).message_id, (await second.json()).message_id);
    const changed = await t.send('POST', '/v1/deliveries', { ...body, payload: { id: 2 } });
    assert.equal(changed.status, 409);
  });

  it('fans out by event type to exactly the matching enabled endpoints', async () => {
    const fan = await createTestDatabase();
    try {
      const f = await createTestApp(fan);
      const make = async (eventTypes: string[], enabled = true) => {
        const id = (
          await (
            await f.send('POST', '/v1/endpoints', { url: 'https://f.example/', event_types: eventTypes })
          ).json()
        ).id;
        if (!enabled) await f.send('PATCH', `/v1/endpoints/${id}`, { enabled: false });
        return id as string;
      };
      const all = await make([]);
      const orders = await make(['order.created', 'order.paid']);
      const users = await make(['user.created']);
      await make(['order.created'], false);
      const res = await f.send('POST', '/v1/deliveries', { event_type: 'order.created', payload: { x: 1 } });
      assert.equal(res.status, 202);
      const got = (await res.json()).deliveries.map((d: { endpoint_id: string }) => d.endpoint_id).sort();
      assert.deepEqual(got, [all, orders].sort());
      const userRes = await (
        await f.send('POST', '/v1/deliveries', { event_type: 'user.created', payload: {} })
      ).json();
      assert.deepEqual(
        userRes.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id).sort(),
        [all, users].sort(),
      );
      const none = await (
        await f.send('POST', '/v1/deliveries', { event_type: 'nobody.cares', payload: {} })
      ).json();
      assert.equal(none.deliveries.length, 1, 'only the catch-all endpoint');
    } finally {
      await fan.drop();
    }
  });

  it('enqueues a batch of 1000 atomically, or rejects it naming the bad item', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 'bulk',
      payload: { i },
    }));
    const beforeMessages = await count('messages');
    const bad = structuredClone(items);
    (bad[637] as { event_type: unknown }).event_type = 42;
    const rejected = await t.send('POST', '/v1/deliveries/batch', { items: bad });
    assert.equal(rejected.status, 400);
    assert.match((await rejected.json()).error.message, /^items\.637\.event_type: /);
    const missing = structuredClone(items);
    missing[999]!.endpoint_id = 'ep_missing';
    const notFound = await t.send('POST', '/v1/deliveries/batch', { items: missing });
    assert.equal(notFound.status, 404);
    assert.deepEqual((await notFound.json()).error.details, { index: 999 });
    assert.equal(await count('messages'), beforeMessages, 'a rejected batch writes nothing');

    const ok = await t.send('POST', '/v1/deliveries/batch', { items }, { 'idempotency-key': 'batch-1' });
    assert.equal(ok.status, 202);
    const body = await ok.json();
    assert.equal(body.results.length, 1000);
    assert.equal(await count('messages'), beforeMessages + 1000);
    const [payload] = await db.sql<
      { payload: Buffer }[]
    >`SELECT payload FROM messages WHERE id = ${body.results[500].message_id}`;
    assert.equal(payload!.payload.toString(), '{"i":500}', 'results come back in request order');

    const again = await t.send('POST', '/v1/deliveries/batch', { items }, { 'idempotency-key': 'batch-1' });
    assert.equal(again.status, 200);
    assert.deepEqual(
      (await again.json()).results.map((r: { message_id: string }) => r.message_id),
      body.results.map((r: { message_id: string }) => r.message_id),
    );
    assert.equal(await count('messages'), beforeMessages + 1000);

    // A conflict on one item rolls back the new items of the same batch too.
    const mixed = [
      { ...items[0]!, payload: { changed: true }, idempotency_key: 'batch-1:0' },
      { endpoint_id: endpointId, event_type: 'new', payload: {} },
    ];
    const conflict = await t.send('POST', '/v1/deliveries/batch', { items: mixed.reverse() });
    assert.equal(conflict.status, 409);
    assert.deepEqual((await conflict.json()).error.details, { index: 1 });
    assert.equal(await count('messages'), beforeMessages + 1000);
  });

  it('hashes only requests that carry a key, and deduplicates keyed items beside keyless ones', async () => {
    const hashOf = async (messageId: string) =>
      (await db.sql<{ h: Buffer }[]>`SELECT request_hash AS h FROM messages WHERE id = ${messageId}`)[0]!.h;
    const keyless = await (
      await t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, event_type: 'k', payload: { n: 1 } })
    ).json();
    assert.equal(
      (await hashOf(keyless.message_id)).length,
      0,
      'a keyless message is never compared: no hash',
    );
    const first = { endpoint_id: endpointId, event_type: 'k', payload: { n: 2 }, event_id: 'evt-mixed' };
    const keyed = await (await t.send('POST', '/v1/deliveries', first)).json();
    assert.equal((await hashOf(keyed.message_id)).length, 32, 'a keyed message keeps its SHA-256');

    // One batch: a keyless item, the keyed one again, and a keyless twin of the first.
    const plain = { endpoint_id: endpointId, event_type: 'k', payload: { n: 1 } };
    const res = await t.send('POST', '/v1/deliveries/batch', { items: [plain, first, plain] });
    assert.equal(res.status, 202);
    const results = (await res.json()).results as { message_id: string; duplicate: boolean }[];
    assert.deepEqual(
      results.map((r) => r.duplicate),
      [false, true, false],
    );
    assert.equal(results[1]!.message_id, keyed.message_id);
    assert.notEqual(results[0]!.message_id, results[2]!.message_id, 'keyless items are never merged');
    assert.notEqual(results[0]!.message_id, keyless.message_id);
  });

  it('answers a keyless batch with the ids of the rows it wrote, in request order', async () => {
    const items = Array.from({ length: 50 }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 'plain',
      payload: { i },
    }));
    const res = await t.send('POST', '/v1/deliveries/batch', { items });
    assert.equal(res.status, 202);
    const results = (await res.json()).results as {
      message_id: string;
      duplicate: boolean;
      deliveries: { id: string; endpoint_id: string; status: string }[];
    }[];
    const stored = await db.sql<
      { id: string; message_id: string; endpoint_id: string; status: string; payload: Buffer }[]
    >`
      SELECT d.id, d.message_id, d.endpoint_id, d.status, m.payload
      FROM deliveries d JOIN messages m ON m.id = d.message_id
      WHERE d.id = ANY(${results.flatMap((r) => r.deliveries.map((d) => d.id))}::text[])`;
    const byId = new Map(stored.map((row) => [row.id, row]));
    assert.equal(byId.size, 50);
    results.forEach((r, i) => {
      assert.equal(r.duplicate, false);
      assert.equal(r.deliveries.length, 1);
      const row = byId.get(r.deliveries[0]!.id)!;
      assert.equal(row.message_id, r.message_id);
      assert.equal(row.endpoint_id, r.deliveries[0]!.endpoint_id);
      assert.equal(row.status, r.deliveries[0]!.status);
      assert.equal(row.payload.toString(), JSON.stringify({ i }), 'result i names item i');
    });
  });

  it('lists deliveries newest first with a keyset cursor and filters', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: {
        data: { id: string; endpoint_id: string; status: string }[];
        next_cursor: string | null;
      } = await (
        await t.send(
          'GET',
          `/v1/deliveries?limit=400&status=pending&endpoint_id=${endpointId}${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).json();
      for (const d of page.data) {
        assert.equal(d.status, 'pending');
        assert.equal(d.endpoint_id, endpointId);
      }
      seen.push(...page.data.map((d) => d.id));
      cursor = page.next_cursor;
    } while (cursor);
    const [total] =
      await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${endpointId} AND status = 'pending'`;
    assert.equal(seen.length, total!.n);
    assert.deepEqual([...seen].sort().reverse(), seen, 'newest first');
    assert.equal((await t.send('GET', '/v1/deliveries?status=lost')).status, 400);
    assert.equal((await t.send('GET', '/v1/deliveries/dlv_nope')).status, 404);
    // By message (the webhook-id a partner quotes): exactly that message's deliveries.
    const [one] = await db.sql<{ message_id: string; n: number }[]>`
      SELECT message_id, count(*)::int AS n FROM deliveries GROUP BY message_id ORDER BY message_id LIMIT 1`;
    const byMessage = await (await t.send('GET', `/v1/deliveries?message_id=${one!.message_id}`)).json();
    assert.equal(byMessage.data.length, one!.n);
    assert.ok(byMessage.data.every((d: { message_id: string }) => d.message_id === one!.message_id));
    assert.deepEqual((await (await t.send('GET', '/v1/deliveries?message_id=msg_nope')).json()).data, []);
  });

  it('answers 503 with Retry-After when the backlog is over the limit', async () => {
    const small = await createTestApp(db, { HOOKPOST_BACKLOG_LIMIT: '5' });
    const res = await small.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: {},
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.equal((await res.json()).error.code, 'backlog_full');
  });
});
