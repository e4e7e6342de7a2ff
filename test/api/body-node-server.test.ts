/**
 * Request bodies read from the Node request itself (body.ts readIncoming), as `hookpost api`
 * serves them: the other API tests go through app.request(), which has no Node request and takes
 * the web-stream path. Over a real socket: a batch is accepted, a body over the limit sent without
 * Content-Length (chunked) is a 413 the client receives, bad JSON a 400, and the next request on
 * a new connection is served.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type ServedApp, serveApp } from '../../src/api/serve.js';
import { createTestApp, createTestDatabase, type TestDatabase, TOKEN } from '../helpers.js';

/** POSTs `chunks` with chunked transfer encoding (no Content-Length); resolves status and body. */
function postChunked(
  port: number,
  path: string,
  chunks: string[],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // The server may answer and close before the whole upload is sent.
    req.on('error', (error) => (error.message.includes('EPIPE') ? undefined : reject(error)));
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('request bodies through the Node server', () => {
  let db: TestDatabase;
  let served: ServedApp;
  let endpointId: string;

  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db, { HOOKPOST_MAX_PAYLOAD_BYTES: '2000' });
    endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json()).id;
    served = await serveApp(t.app, 0, '127.0.0.1');
  });
  after(async () => {
    await served?.close();
    await db.drop();
  });

  it('accepts a batch sent in pieces', async () => {
    const body = JSON.stringify({
      items: [1, 2, 3].map((n) => ({ endpoint_id: endpointId, event_type: 'body.test', payload: { n } })),
    });
    const res = await postChunked(served.port, '/v1/deliveries/batch', [body.slice(0, 40), body.slice(40)]);
    assert.equal(res.status, 202, res.body);
    assert.equal((JSON.parse(res.body) as { results: unknown[] }).results.length, 3);
  });

  it('answers 413 to a body over the limit with no Content-Length, and keeps serving', async () => {
    const head = `{"endpoint_id":"${endpointId}","event_type":"body.test","payload":{"pad":"`;
    const res = await postChunked(served.port, '/v1/deliveries', [
      head,
      'x'.repeat(8000),
      'x'.repeat(8000),
      '"}}',
    ]);
    assert.equal(res.status, 413, res.body);
    assert.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'payload_too_large');
    const again = await postChunked(served.port, '/v1/deliveries', [
      JSON.stringify({ endpoint_id: endpointId, event_type: 'body.test', payload: { ok: true } }),
    ]);
    assert.equal(again.status, 202, again.body);
  });

  it('answers 400 to JSON that does not parse, with where', async () => {
    const res = await postChunked(served.port, '/v1/deliveries', ['{"endpoint_id": ', '}']);
    assert.equal(res.status, 400);
    assert.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'invalid_json');
  });
});
