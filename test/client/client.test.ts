/**
 * createHookpostClient() against the real app on a real database (in-process: the client's
 * `fetch` hands each Request to the Hono app), plus a real HTTP server for the answers hookpost
 * itself cannot be made to give on cue (a 503 that clears after Retry-After: 0, a proxy's HTML
 * 502). The packed package against a running hookpost is package.test.ts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHookpostClient, HookpostError } from '../../clients/typescript/src/index.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type TestDatabase,
  TOKEN,
  waitFor,
} from '../helpers.js';

type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/** A client over the in-process app that counts the requests it sends. */
function clientFor(
  t: TestApp,
  options: { token?: string; retry?: false | { maxDelaySeconds?: number } } = {},
) {
  const sent: Request[] = [];
  const client = createHookpostClient({
    baseUrl: 'http://hookpost.test',
    token: options.token ?? TOKEN,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    fetch: async (request) => {
      sent.push(request);
      return t.app.request(request);
    },
  });
  return { client, sent };
}

describe('@hookpost/client against the app', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpointId: string;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    endpointId = (await createEndpoint(t, 'http://127.0.0.1:9/hook')).id;
  });
  after(() => db.drop());

  it('enqueues and reads a delivery in the openapi-fetch shape', async () => {
    const { client } = clientFor(t);
    const { data, error, response } = await client.POST('/v1/deliveries', {
      body: { endpoint_id: endpointId, event_type: 'order.created', payload: { id: 1 } },
    });
    assert.equal(error, undefined);
    assert.equal(response.status, 202);
    const id = data!.deliveries[0]!.id;
    const read = await client.GET('/v1/deliveries/{id}', { params: { path: { id } } });
    assert.equal(read.data?.id, id);
    assert.equal(read.data?.message_id, data!.message_id);
    assert.deepEqual(read.data?.attempts, []);
  });

  it('turns every error answer into a HookpostError with status, code, message and details', async () => {
    const { client } = clientFor(t);
    const missing = await client.GET('/v1/deliveries/{id}', {
      params: { path: { id: `dlv_${'0'.repeat(32)}` } },
    });
    assert.ok(missing.error instanceof HookpostError);
    assert.equal(missing.error.status, 404);
    assert.match(missing.error.code, /not_found/);
    assert.equal(missing.data, undefined);

    const invalid = await client.POST('/v1/endpoints', { body: { url: 'not a url' } });
    assert.ok(invalid.error instanceof HookpostError);
    assert.equal(invalid.error.status, 400);
    assert.equal(invalid.error.code, 'validation_failed');
    assert.ok(Array.isArray(invalid.error.details), 'validation details come along');

    const anonymous = await clientFor(t, { token: 'wrong' }).client.GET('/v1/endpoints');
    assert.equal(anonymous.error?.status, 401);
    assert.equal(anonymous.error?.code, 'unauthorized');
  });

  it('batch enqueue with an idempotency key: the same batch again is 200 with the same ids, another body 409', async () => {
    const { client } = clientFor(t);
    const items = [1, 2, 3].map((n) => ({
      endpoint_id: endpointId,
      event_type: 'batch.item',
      payload: { n },
    }));
    const first = await client.enqueueBatch(items, { idempotencyKey: 'client-test-batch' });
    assert.equal(first.response.status, 202);
    const again = await client.enqueueBatch(items, { idempotencyKey: 'client-test-batch' });
    assert.equal(again.response.status, 200);
    const ids = (r: typeof first) =>
      r.data?.results.map((m) => [m.message_id, m.deliveries.map((d) => d.id)]);
    assert.deepEqual(ids(again), ids(first));
    assert.ok(again.data?.results.every((m) => m.duplicate));
    const changed = await client.enqueueBatch([{ ...items[0]!, payload: { n: 99 } }], {
      idempotencyKey: 'client-test-batch',
    });
    assert.ok(changed.error instanceof HookpostError);
    assert.equal(changed.error.status, 409);
    assert.equal(changed.error.code, 'idempotency_conflict');
    const unkeyed = await client.enqueueBatch(items);
    assert.equal(unkeyed.response.status, 202, 'without a key the same batch is new deliveries');
  });

  it('lists follow next_cursor to the end, one request per page', async () => {
    const { client, sent } = clientFor(t);
    for (let i = 0; i < 4; i++) await createEndpoint(t, `http://127.0.0.1:9/list-${i}`);
    const all = await t.send('GET', '/v1/endpoints?limit=500');
    const expected = ((await all.json()).data as { id: string }[]).map((e) => e.id);
    assert.equal(expected.length, 5);
    const seen: string[] = [];
    for await (const endpoint of client.list('/v1/endpoints', { params: { query: { limit: '2' } } })) {
      seen.push(endpoint.id);
    }
    assert.deepEqual(seen, expected);
    assert.equal(sent.length, 3, 'pages of 2, 2 and 1');
    assert.deepEqual(
      sent.map((r) => new URL(r.url).searchParams.get('cursor')),
      [null, expected[1], expected[3]],
    );
    // Stopping early sends no further page.
    sent.length = 0;
    for await (const _ of client.list('/v1/endpoints', { params: { query: { limit: '2' } } })) break;
    assert.equal(sent.length, 1);
  });

  it('a list whose page fails throws the HookpostError', async () => {
    const { client } = clientFor(t);
    const iterate = async () => {
      for await (const _ of client.list('/v1/deliveries', { params: { query: { cursor: 'bogus' } } })) {
        // never reached
      }
    };
    await assert.rejects(iterate, (e: unknown) => e instanceof HookpostError && e.code === 'invalid_cursor');
  });

  it('waits out a 429 for the Retry-After hookpost sends, and hands it back with retry: false', async () => {
    const limited = await keySender(t, { scopes: ['deliveries:write'], rate_limit_per_second: 1 });
    const body = { endpoint_id: endpointId, event_type: 'limited', payload: {} };
    const noRetry = clientFor(t, { token: limited.key, retry: false });
    assert.equal((await noRetry.client.POST('/v1/deliveries', { body })).response.status, 202);
    const refused = await noRetry.client.POST('/v1/deliveries', { body });
    assert.ok(refused.error instanceof HookpostError);
    assert.equal(refused.error.status, 429);
    assert.equal(refused.error.code, 'rate_limited');
    assert.ok(refused.error.retryAfterSeconds! >= 1, 'Retry-After comes with the error');

    const { client, sent } = clientFor(t, { token: limited.key });
    const started = Date.now();
    const result = await client.POST('/v1/deliveries', { body });
    assert.equal(result.response.status, 202, 'accepted once the limit allowed it');
    assert.ok(sent.length >= 2, 'the refused attempt was sent again');
    assert.ok(Date.now() - started >= 900, 'after waiting as told');
  });
});

describe('@hookpost/client: a 503 backlog from the app', () => {
  let db: TestDatabase;
  let t: TestApp;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_BACKLOG_LIMIT: '1' });
  });
  after(() => db.drop());

  it('is not retried for a POST without an Idempotency-Key (a 503 may follow a stored request)', async () => {
    const endpointId = (await createEndpoint(t, 'http://127.0.0.1:9/hook')).id;
    const body = { endpoint_id: endpointId, event_type: 'x', payload: {} };
    await t.send('POST', '/v1/deliveries/batch', { items: [body, body] });
    // The backlog is counted at most once a second: wait until the count sees the two.
    await waitFor('the backlog guard to refuse', async () => {
      const res = await t.send('POST', '/v1/deliveries', body);
      return res.status === 503;
    });
    const { client, sent } = clientFor(t);
    const full = await client.POST('/v1/deliveries', { body });
    assert.ok(full.error instanceof HookpostError);
    assert.equal(full.error.status, 503);
    assert.equal(full.error.code, 'backlog_full');
    assert.equal(full.error.retryAfterSeconds, 5);
    assert.equal(sent.length, 1);
  });
});

/** A real HTTP server answering from a script: one answer per request, the last repeated. */
async function scriptedServer(
  answers: { status: number; headers?: Record<string, string>; body?: string }[],
) {
  const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)]!;
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('@hookpost/client over HTTP', () => {
  const unavailable = {
    status: 503,
    headers: { 'retry-after': '0' },
    body: '{"error":{"code":"database_unavailable","message":"try again shortly"}}',
  };
  const enqueued = { status: 202, body: '{"message_id":"msg_1","deliveries":[]}' };

  it('sends a keyed POST again after a 503 with Retry-After, the same body and key each time', async () => {
    const server = await scriptedServer([unavailable, unavailable, enqueued]);
    try {
      const client = createHookpostClient({ baseUrl: `${server.baseUrl}/`, token: 'hpk_test' });
      const result = await client.enqueueBatch([{ event_type: 'x', payload: { a: 1 } }], {
        idempotencyKey: 'k1',
      });
      assert.equal(result.response.status, 202);
      assert.equal(server.seen.length, 3);
      for (const request of server.seen) {
        assert.equal(request.url, '/v1/deliveries/batch');
        assert.equal(request.headers['idempotency-key'], 'k1');
        assert.equal(request.headers.authorization, 'Bearer hpk_test');
        assert.deepEqual(JSON.parse(request.body), { items: [{ event_type: 'x', payload: { a: 1 } }] });
      }
    } finally {
      await server.close();
    }
  });

  it('gives up after maxRetries, and never waits longer than maxDelaySeconds', async () => {
    const server = await scriptedServer([unavailable]);
    try {
      const client = createHookpostClient({ baseUrl: server.baseUrl, token: 't', retry: { maxRetries: 1 } });
      const result = await client.GET('/v1/pipeline');
      assert.equal(result.error?.code, 'database_unavailable');
      assert.equal(server.seen.length, 2, 'the first try and one retry');
    } finally {
      await server.close();
    }
    const slow = await scriptedServer([{ ...unavailable, headers: { 'retry-after': '3600' } }]);
    try {
      const client = createHookpostClient({ baseUrl: slow.baseUrl, token: 't' });
      const result = await client.GET('/v1/pipeline');
      assert.equal(result.error?.retryAfterSeconds, 3600, 'handed back to the caller');
      assert.equal(slow.seen.length, 1);
    } finally {
      await slow.close();
    }
  });

  it('stops waiting when the request is aborted', async () => {
    const server = await scriptedServer([{ ...unavailable, headers: { 'retry-after': '5' } }]);
    try {
      const client = createHookpostClient({ baseUrl: server.baseUrl, token: 't' });
      const started = Date.now();
      await assert.rejects(client.GET('/v1/pipeline', { signal: AbortSignal.timeout(200) }), {
        name: 'TimeoutError',
      });
      assert.ok(Date.now() - started < 4000);
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });

  it("a proxy's error page becomes a HookpostError with code unexpected_response", async () => {
    const server = await scriptedServer([
      { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad Gateway</html>' },
    ]);
    try {
      const client = createHookpostClient({ baseUrl: server.baseUrl, token: 't' });
      const result = await client.GET('/v1/pipeline');
      assert.ok(result.error instanceof HookpostError);
      assert.equal(result.error.status, 502);
      assert.equal(result.error.code, 'unexpected_response');
      assert.doesNotMatch(result.error.message, /html/i, 'the page is not quoted');
    } finally {
      await server.close();
    }
  });
});
