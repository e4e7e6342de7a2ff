import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/deliveries/enqueue.js';
import { claimDue, createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

/** Payloads travel as text on a UTF-8 server (src/db/encoding.ts); the bytes must not change. */
describe('payloads as text on the wire', () => {
  let db: TestDatabase;
  let endpointId: string;
  let send: Awaited<ReturnType<typeof createTestApp>>['send'];
  before(async () => {
    db = await createTestDatabase();
    ({ send } = await createTestApp(db));
    endpointId = (await (await send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
  });
  after(() => db.drop());
  const producer = { keyId: 'admin', tenantId: null, operations: true };
  /** An enqueue item for the test endpoint, without its payload. */
  const bareItem = () => ({
    tenantId: null,
    endpointId,
    eventType: 't',
    eventId: null,
    orderingKey: null,
    idempotencyKey: null,
  });

  it('stores and claims every payload byte for byte, and refuses bytes that are not UTF-8 text', async () => {
    const payloads = [
      '{ "a" : "ü€😀 中文",\n  "esc": "\\u0000\\ud800" }',
      '[1, 2.50, true, null]',
      '"x"',
      `{"big":"${'é'.repeat(3000)}"}`,
    ];
    const body = `{"items":[${payloads.map((p) => `{"endpoint_id":"${endpointId}","event_type":"t","payload":${p}}`).join(',')}]}`;
    assert.equal((await send('POST', '/v1/deliveries/batch', body)).status, 202);
    const claimed = await claimDue(db.sql, {
      limit: 10,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 10,
      limitedEndpoints: false,
    });
    const stored = await db.sql<{ id: string; payload: Buffer }[]>`SELECT id, payload FROM messages`;
    const want = payloads.map((p) => Buffer.from(p, 'utf8').toString('hex')).sort();
    assert.deepEqual(claimed.map((c) => c.payload.toString('hex')).sort(), want, 'claimed bytes');
    assert.deepEqual(stored.map((m) => m.payload.toString('hex')).sort(), want, 'stored bytes');

    // The claim reads payloads back as text, so the one writer refuses anything else outright.
    const item = bareItem();
    for (const bad of [Buffer.from([0x7b, 0xff, 0x7d]), Buffer.from('{"a":"\0"}')]) {
      await assert.rejects(
        enqueue(db.sql, producer, [{ ...item, payload: bad }]),
        /not UTF-8 text without NUL/,
      );
    }
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM messages`;
    assert.equal(row?.n, payloads.length, 'nothing written for a refused payload');
  });

  it('stores payloads cut from an ASCII body, and views of one buffer with other bytes between them, exactly', async () => {
    await db.sql`TRUNCATE messages, deliveries, delivery_queue`;
    // All ASCII: the API hands on views of the body's bytes, and the enqueue sends the stretch of
    // the body that holds them (src/api/body.ts, packPayloads).
    const ascii = ['{ "a" : 1,\n\t"b": "\\u00e9 \\" x" }', '[ ]', '"y"', `{"pad":"${'z'.repeat(5000)}"}`];
    const body = `{ "items" : [ ${ascii.map((p) => `{"payload": ${p} ,"endpoint_id":"${endpointId}", "event_type":"t"}`).join(' ,\n ')} ] }`;
    assert.equal((await send('POST', '/v1/deliveries/batch', body)).status, 202);
    const stored = await db.sql<{ payload: Buffer }[]>`SELECT payload FROM messages ORDER BY id`;
    assert.deepEqual(
      stored.map((m) => m.payload.toString('latin1')),
      ascii,
      'each payload exactly, none of the envelope between them',
    );

    // Views of one buffer whose gaps are not text (as small Buffers sharing node's pool can be):
    // the payloads alone are stored; the gaps are neither sent nor a reason to refuse them.
    await db.sql`TRUNCATE messages, deliveries, delivery_queue`;
    const shared = Buffer.concat([Buffer.from('{"p":1}'), Buffer.from([0, 0xff]), Buffer.from('{"p":2}')]);
    const item = bareItem();
    await enqueue(db.sql, producer, [
      { ...item, payload: shared.subarray(0, 7) },
      { ...item, payload: shared.subarray(9) },
    ]);
    const views = await db.sql<{ payload: Buffer }[]>`SELECT payload FROM messages ORDER BY id`;
    assert.deepEqual(
      views.map((m) => m.payload.toString('latin1')),
      ['{"p":1}', '{"p":2}'],
    );
  });
});
