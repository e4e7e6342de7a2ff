/**
 * Input that passes a naive schema and then breaks further in: deep nesting (JSON.stringify's
 * recursion, PostgreSQL's jsonb parser), lone surrogates (jsonb's 22P02), header values undici
 * would refuse on every attempt, timestamps PostgreSQL cannot hold, and syntax errors whose
 * message would quote the body. Each must be a 400 in the contract's format, with nothing written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseTimeArg } from '../../src/cli/time-arg.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { createTestApp, createTestDatabase, type TestDatabase, type TestResponse } from '../helpers.js';

const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);
/** `{"k":{"k":…1…}}`, `depth` objects deep. */
const nestedObject = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { k: value };
  return value;
};

describe('hostile input', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let endpointId: string;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    const res = await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/hook' });
    endpointId = (await res.json()).id;
  });
  after(() => db.drop());

  const counts = async () =>
    (
      await db.sql<{ n: number }[]>`
        SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM messages) AS n`
    )[0]!.n;

  async function expect400(res: TestResponse, code: string, field?: string) {
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.error.code, code);
    if (field) assert.ok(body.error.message.startsWith(field), body.error.message);
    return body;
  }

  it('refuses a payload nested deeper than 512 levels, single and in a batch', async () => {
    const before = await counts();
    const single = `{"endpoint_id":"${endpointId}","event_type":"x","payload":${nested(5000)}}`;
    await expect400(await t.send('POST', '/v1/deliveries', single), 'validation_failed', 'payload');
    await expect400(
      await t.send('POST', '/v1/deliveries', `{"event_type":"x","payload":${nested(513)}}`),
      'validation_failed',
      'payload',
    );
    const batch = `{"items":[{"endpoint_id":"${endpointId}","event_type":"x","payload":1},
      {"endpoint_id":"${endpointId}","event_type":"x","payload":{"a":${nested(600)}}}]}`;
    await expect400(
      await t.send('POST', '/v1/deliveries/batch', batch),
      'validation_failed',
      'items.1.payload',
    );
    assert.equal(await counts(), before, 'nothing written');
  });

  it('accepts 512 levels and reads the delivery back', async () => {
    const payload = nested(512, '"leaf"');
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${endpointId}","event_type":"x","payload":${payload}}`,
    );
    assert.equal(res.status, 202);
    const id = (await res.json()).deliveries[0].id;
    const read = await t.send('GET', `/v1/deliveries/${id}`);
    assert.equal(read.status, 200);
    const body = await read.json();
    assert.equal(JSON.stringify(body.payload), payload);
    assert.equal(body.id, id);
  });

  it('reads back a deeply nested payload stored before the bound existed', async () => {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: 1,
    });
    const { message_id: messageId, deliveries } = await res.json();
    const deep = nested(5000);
    await db.sql`UPDATE messages SET payload = ${Buffer.from(deep)} WHERE id = ${messageId}`;
    const read = await t.send('GET', `/v1/deliveries/${deliveries[0].id}`);
    assert.equal(read.status, 200);
    const text = await read.text();
    assert.ok(text.includes(`"payload":${deep}`), 'the stored bytes, as they are');
    assert.equal(JSON.parse(text).attempts.length, 0);
  });

  it('refuses metadata nested deeper than 64 levels on create and update', async () => {
    const before = await counts();
    const deep = `{"url":"https://example.com/hook","metadata":${'{"k":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    for (const body of [{ url: 'https://example.com/hook', metadata: nestedObject(65) }, deep]) {
      await expect400(await t.send('POST', '/v1/endpoints', body), 'validation_failed', 'metadata');
    }
    const patch = await t.send('PATCH', `/v1/endpoints/${endpointId}`, { metadata: nestedObject(65) });
    await expect400(patch, 'validation_failed', 'metadata');
    assert.equal(await counts(), before);
    const ok = await t.send('POST', '/v1/endpoints', {
      url: 'https://example.com/hook',
      metadata: nestedObject(64),
    });
    assert.equal(ok.status, 201);
  });

  it('refuses lone surrogates in metadata values, metadata keys and header values', async () => {
    const before = await counts();
    const bodies = [
      '{"url":"https://example.com/hook","metadata":{"a":"x\\ud800"}}',
      '{"url":"https://example.com/hook","metadata":{"a":{"b":["ok","\\udfff"]}}}',
      '{"url":"https://example.com/hook","metadata":{"\\ud800":"x"}}',
      '{"url":"https://example.com/hook","headers":{"x-token":"\\ud800"}}',
    ];
    for (const body of bodies) {
      await expect400(await t.send('POST', '/v1/endpoints', body), 'validation_failed');
    }
    const patch = await t.send('PATCH', `/v1/endpoints/${endpointId}`, '{"metadata":{"a":"\\ud800"}}');
    await expect400(patch, 'validation_failed', 'metadata.a');
    assert.equal(await counts(), before);
    // A proper pair is fine.
    const pair = await t.send(
      'POST',
      '/v1/endpoints',
      '{"url":"https://example.com/hook","metadata":{"a":"\\ud83d\\ude00"}}',
    );
    assert.equal(pair.status, 201);
    assert.equal((await pair.json()).metadata.a, '\u{1f600}');
  });

  it('refuses header values undici would never send, and bad or repeated names', async () => {
    const before = await counts();
    const bad: Record<string, string>[] = [
      { 'x-a': 'one\u0001two' },
      { 'x-a': 'tab\tok but \u007f not' },
      { 'x-a': 'euro \u20ac' },
      { 'x-a': 'emoji \u{1f600}' },
      { 'x-a': 'line\nbreak' },
      { 'bad name': 'v' },
      { 'x-\u00e9': 'v' },
      { 'X-Token': 'a', 'x-token': 'b' },
    ];
    for (const headers of bad) {
      const res = await t.send('POST', '/v1/endpoints', { url: 'https://example.com/hook', headers });
      await expect400(res, 'validation_failed', 'headers');
    }
    const patch = await t.send('PATCH', `/v1/endpoints/${endpointId}`, { headers: { 'x-a': '\u0000' } });
    await expect400(patch, 'validation_failed', 'headers.x-a');
    assert.equal(await counts(), before);
    const ok = await t.send('POST', '/v1/endpoints', {
      url: 'https://example.com/hook',
      headers: { 'x-a': 'caf\u00e9\tand ~ all printable' },
    });
    assert.equal(ok.status, 201);
  });

  it('refuses replay bounds PostgreSQL cannot hold, and lone surrogates bound for the audit row', async () => {
    const cases: Record<string, string>[] = [
      { since: '0000-01-01T00:00:00Z' },
      { since: '0001-01-01T00:30:00+01:00' },
      { until: '2026-01-01T00:00:00+16:00' },
      { until: '2026-01-01T00:00:00-23:59' },
      { since: '2026-02-30T00:00:00Z' },
      { since: '9999-12-31T23:59:59-15:59' },
    ];
    for (const bounds of cases) {
      const res = await t.send('POST', '/v1/dead-letters/replay', { ...bounds, dry_run: true });
      await expect400(res, 'validation_failed', Object.keys(bounds)[0]);
    }
    for (const field of ['error_class', 'endpoint_id']) {
      const res = await t.send('POST', '/v1/dead-letters/replay', `{"${field}":"x\\udc00","dry_run":true}`);
      await expect400(res, 'validation_failed', field);
    }
    const ok = await t.send('POST', '/v1/dead-letters/replay', {
      since: '0001-01-01T00:00:00Z',
      until: '2026-01-01T00:00:00+15:59',
      dry_run: true,
    });
    assert.equal(ok.status, 200, await ok.clone().text());
    assert.equal((await ok.json()).matched, 0);
  });

  it('gives the position of a JSON syntax error, never the text around it', async () => {
    const bodies = [
      '{"payload": {"card":"4111111111111111", "cvv": 123,}}',
      '{"event_type":"x","payload":{"password":hunter2}}',
      '{"event_type":"x",\n "payload":"unterminated secret',
      '{"event_type":"x","payload":"tab\there"}',
    ];
    for (const text of bodies) {
      const res = await t.send('POST', '/v1/deliveries', text);
      const body = await expect400(res, 'invalid_json');
      const shown = JSON.stringify(body);
      for (const secret of ['4111', 'cvv', 'hunter2', 'secret', 'password', 'here']) {
        assert.ok(!shown.includes(secret), `${shown} must not quote the body`);
      }
      assert.equal(typeof body.error.details.position, 'number');
      assert.ok(body.error.details.line >= 1 && body.error.details.column >= 1);
    }
    const res = await t.send('POST', '/v1/deliveries', '{"event_type":"x","payload":{"password":hunter2}}');
    assert.deepEqual((await res.json()).error.details, { position: 40, line: 1, column: 41 });
  });
});

describe('--since / --until bounds', () => {
  const now = new Date('2026-05-01T00:00:00Z');
  it('refuses times PostgreSQL cannot hold', () => {
    for (const value of ['0000-01-01', '0000-06-01T00:00:00Z', '2026-01-01T00:00:00+16:00', '999999999d']) {
      assert.throws(() => parseTimeArg('since', value, now), UsageError, value);
    }
    assert.equal(parseTimeArg('since', '2026-01-01T00:00:00+15:59', now), '2025-12-31T08:01:00.000Z');
    assert.equal(parseTimeArg('until', '2d', now), '2026-04-29T00:00:00.000Z');
  });
});
