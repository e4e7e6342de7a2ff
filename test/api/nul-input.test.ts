/**
 * PostgreSQL refuses U+0000 in text and jsonb. Wherever a caller's text reaches the database (ids
 * in paths, cursors, descriptions, metadata, event types), that must be a 400 in the contract's
 * format and nothing written, never a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';
import { parsePrometheusText } from '../metrics/prom-text.js';

describe('NUL characters in caller text', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  const counts = async () =>
    (
      await db.sql<{ n: number }[]>`
        SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM messages)
             + (SELECT count(*) FROM deliveries) AS n`
    )[0]!.n;

  it('answers 400 invalid_text and writes nothing', async () => {
    const before = await counts();
    const requests: [string, string, unknown?][] = [
      ['GET', '/v1/endpoints/%00'],
      ['GET', '/v1/endpoints?cursor=%00'],
      ['GET', '/v1/endpoints/%00/health'],
      ['GET', '/v1/deliveries/%00'],
      ['GET', '/v1/deliveries?cursor=%00'],
      ['POST', '/v1/deliveries/%00/replay'],
      ['GET', '/v1/dead-letters/analysis?endpoint_id=%00'],
      ['GET', '/v1/dead-letters/replays/%00'],
      ['POST', '/v1/endpoints', { url: 'https://example.com/hook', description: 'a\u0000b' }],
      ['POST', '/v1/endpoints', { url: 'https://example.com/hook', metadata: { k: '\u0000' } }],
      ['POST', '/v1/deliveries', { event_type: 'a\u0000b', payload: {} }],
    ];
    for (const [method, path, body] of requests) {
      const res = await t.send(method as 'GET' | 'POST', path, body);
      assert.equal(res.status, 400, `${method} ${path}`);
      assert.equal((await res.json()).error.code, 'invalid_text', `${method} ${path}`);
    }
    assert.equal(await counts(), before, 'nothing half written');
    const metrics = parsePrometheusText(await (await t.request('/metrics')).text());
    assert.equal(
      metrics.value('hookpost_enqueue_rejected_total', { reason: 'invalid_text' }),
      1,
      'the refused enqueue is counted under its real reason',
    );
  });
});
