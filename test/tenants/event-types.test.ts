/**
 * The event-type catalog and schema validation at enqueue: a mismatch names the JSON pointer,
 * one bad item rejects a whole batch with its index, unregistered types pass, and a schema is
 * compiled once per version.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SchemaCatalog } from '../../src/tenants/event-types.js';
import { createEndpoint, createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

const orderSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['order_id', 'amount'],
  properties: {
    order_id: { type: 'string' },
    amount: { type: 'number', minimum: 0 },
    lines: { type: 'array', items: { type: 'object', required: ['sku'] } },
  },
  // A 2020-12 keyword: an older draft validator would ignore it.
  dependentRequired: { amount: ['currency'] },
};

describe('event types', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    await createEndpoint(t, 'http://127.0.0.1:9/catalog', { event_types: ['order.*'] });
  });
  after(async () => {
    await db.drop();
  });

  const messages = async () => (await db.sql`SELECT count(*)::int AS n FROM messages`)[0]!.n as number;

  it('PUT creates (201) and updates (200); GET and list show it; a bad schema is 400', async () => {
    const created = await t.send('PUT', '/v1/event-types/order.created', {
      description: 'An order was placed',
      schema: orderSchema,
      example: { order_id: 'o1', amount: 5, currency: 'EUR' },
    });
    assert.equal(created.status, 201);
    assert.equal((await created.json()).schema_version, 1);
    const updated = await t.send('PUT', '/v1/event-types/order.created', { deprecated: false });
    assert.equal(updated.status, 200);
    assert.equal((await updated.json()).schema_version, 1, 'no schema change, same version');
    const got = await (await t.send('GET', '/v1/event-types/order.created')).json();
    assert.equal(got.description, 'An order was placed');
    assert.deepEqual(got.schema, orderSchema);
    const list = await (await t.send('GET', '/v1/event-types')).json();
    assert.deepEqual(
      list.data.map((e: { name: string }) => e.name),
      ['order.created'],
    );
    const bad = await t.send('PUT', '/v1/event-types/bad.schema', { schema: { type: 'no-such-type' } });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, 'invalid_schema');
    const badExample = await t.send('PUT', '/v1/event-types/bad.example', {
      schema: { type: 'object', required: ['a'] },
      example: {},
    });
    assert.equal(badExample.status, 400);
    assert.equal((await t.send('GET', '/v1/event-types/nope')).status, 404);
  });

  it('a mismatching payload is 400 schema_mismatch with the JSON pointer, never the value', async () => {
    const before = await messages();
    const wrongType = await t.send('POST', '/v1/deliveries', {
      event_type: 'order.created',
      payload: { order_id: 'o1', amount: 'SECRET-VALUE', currency: 'EUR' },
    });
    assert.equal(wrongType.status, 400);
    const body = await wrongType.json();
    assert.equal(body.error.code, 'schema_mismatch');
    assert.equal(body.error.details.pointer, '/amount');
    assert.match(body.error.message, /payload\/amount/);
    assert.ok(!JSON.stringify(body).includes('SECRET-VALUE'));
    const missing = await (
      await t.send('POST', '/v1/deliveries', {
        event_type: 'order.created',
        payload: { amount: 1, currency: 'X' },
      })
    ).json();
    assert.equal(missing.error.details.pointer, '/order_id', 'a missing member is named itself');
    const nested = await (
      await t.send('POST', '/v1/deliveries', {
        event_type: 'order.created',
        payload: { order_id: 'o', amount: 1, currency: 'X', lines: [{ sku: 'a' }, {}] },
      })
    ).json();
    assert.equal(nested.error.details.pointer, '/lines/1/sku');
    const dependent = await (
      await t.send('POST', '/v1/deliveries', {
        event_type: 'order.created',
        payload: { order_id: 'o', amount: 1 },
      })
    ).json();
    assert.equal(dependent.error.code, 'schema_mismatch', 'draft 2020-12 keywords are enforced');
    assert.equal(await messages(), before, 'nothing was written');
    const ok = await t.send('POST', '/v1/deliveries', {
      event_type: 'order.created',
      payload: { order_id: 'o1', amount: 5, currency: 'EUR' },
    });
    assert.equal(ok.status, 202);
  });

  it('one bad item rejects the whole batch with its index', async () => {
    const before = await messages();
    const good = { event_type: 'order.created', payload: { order_id: 'o', amount: 1, currency: 'EUR' } };
    const res = await t.send('POST', '/v1/deliveries/batch', {
      items: [
        good,
        good,
        { event_type: 'order.created', payload: { order_id: 7, amount: 1, currency: 'EUR' } },
        good,
      ],
    });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, 'schema_mismatch');
    assert.equal(body.error.details.index, 2);
    assert.equal(body.error.details.pointer, '/order_id');
    assert.match(body.error.message, /items\[2\]\.payload\/order_id/);
    assert.equal(await messages(), before, 'the batch was rejected whole');
  });

  it('unregistered event types, and types without a schema, are accepted as before', async () => {
    await t.send('PUT', '/v1/event-types/order.noted', { description: 'no schema' });
    for (const type of ['order.unknown', 'order.noted']) {
      const res = await t.send('POST', '/v1/deliveries', { event_type: type, payload: [1, 'anything'] });
      assert.equal(res.status, 202, type);
    }
  });

  it('a schema change applies at once in this process; DELETE removes the type and its schema', async () => {
    await t.send('PUT', '/v1/event-types/order.tightened', { schema: { type: 'object' } });
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { event_type: 'order.tightened', payload: 1 })).status,
      400,
    );
    const v2 = await t.send('PUT', '/v1/event-types/order.tightened', { schema: { type: 'number' } });
    assert.equal((await v2.json()).schema_version, 2);
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { event_type: 'order.tightened', payload: 1 })).status,
      202,
    );
    assert.equal((await t.send('DELETE', '/v1/event-types/order.tightened')).status, 204);
    assert.equal(
      (await t.send('POST', '/v1/deliveries', { event_type: 'order.tightened', payload: 'x' })).status,
      202,
    );
    assert.equal((await t.send('DELETE', '/v1/event-types/order.tightened')).status, 404);
  });

  it('compiles a schema once per version, not per request', async () => {
    await t.send('PUT', '/v1/event-types/order.cached', { schema: { type: 'object' } });
    const catalog = new SchemaCatalog(db.sql);
    const first = (await catalog.validatorsFor(['order.cached'])).get('order.cached');
    const second = (await catalog.validatorsFor(['order.cached', 'order.cached'])).get('order.cached');
    assert.ok(first && first === second, 'the same compiled function is reused');
    await t.send('PUT', '/v1/event-types/order.cached', { schema: { type: 'array' } });
    catalog.invalidate();
    const third = (await catalog.validatorsFor(['order.cached'])).get('order.cached');
    assert.ok(third && third !== first, 'a new version is compiled anew');
    assert.equal(third([]), true);
  });
});
