/**
 * A cursor that does not decode is a 400 invalid_cursor (not a silent first or empty page), and a
 * too-large enqueue reports the limit the user configured, not the body limit behind it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('pagination cursors and the payload limit in messages', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let endpointId: string;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/' })).json()).id;
    await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/b' });
    for (let i = 0; i < 3; i++) {
      await t.send('POST', '/v1/deliveries', { endpoint_id: endpointId, event_type: 'x', payload: { i } });
    }
  });
  after(async () => db?.drop());

  it('answers 400 invalid_cursor for a cursor that is not a next_cursor', async () => {
    for (const route of ['/v1/deliveries', '/v1/endpoints']) {
      for (const cursor of ['garbage', 'dlv_', 'ep_zzzz', `ep_${'0'.repeat(31)}`, "dlv_' OR 1=1"]) {
        const res = await t.send('GET', `${route}?cursor=${encodeURIComponent(cursor)}`);
        assert.equal(res.status, 400, `${route} cursor=${cursor}`);
        const body = await res.json();
        assert.equal(body.error.code, 'invalid_cursor');
        assert.match(body.error.message, /next_cursor/);
      }
    }
    // A cursor of the other list's kind does not decode here either.
    const wrong = await t.send('GET', `/v1/deliveries?cursor=${endpointId}`);
    assert.equal(wrong.status, 400);
  });

  it('still pages with a real next_cursor', async () => {
    const first = await (await t.send('GET', '/v1/deliveries?limit=2')).json();
    assert.equal(first.data.length, 2);
    const second = await (await t.send('GET', `/v1/deliveries?limit=2&cursor=${first.next_cursor}`)).json();
    assert.equal(second.data.length, 1);
    assert.equal(second.next_cursor, null);
    const endpoints = await (await t.send('GET', '/v1/endpoints?limit=1')).json();
    const rest = await t.send('GET', `/v1/endpoints?limit=1&cursor=${endpoints.next_cursor}`);
    assert.equal(rest.status, 200);
    assert.equal((await rest.json()).data.length, 1);
  });

  it('a 413 names the configured HOOKPOST_MAX_PAYLOAD_BYTES, not the internal body limit', async () => {
    assert.equal(t.config.maxPayloadBytes, 262144);
    const body = JSON.stringify({ endpoint_id: endpointId, event_type: 'x', payload: 'a'.repeat(400_000) });
    const res = await t.send('POST', '/v1/deliveries', body);
    assert.equal(res.status, 413);
    const { error } = await res.json();
    assert.equal(error.code, 'payload_too_large');
    assert.match(error.message, /262144-byte limit \(HOOKPOST_MAX_PAYLOAD_BYTES\)/);
    assert.doesNotMatch(error.message, /327680/);
    const small = await createTestApp(db, { HOOKPOST_MAX_PAYLOAD_BYTES: '1000' });
    const tooBig = await small.send('POST', '/v1/deliveries', body);
    assert.match((await tooBig.json()).error.message, /1000-byte limit/);
  });
});
