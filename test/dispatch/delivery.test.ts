import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
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

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('dispatcher: signing, retries, dead letters', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  const receivers: Receiver[] = [];

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '4',
      HOOKPOST_REQUEST_TIMEOUT_MS: '400',
    });
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  async function endpointFor(receiver: Receiver, extra: Record<string, unknown> = {}) {
    receivers.push(receiver);
    return createEndpoint(t, receiver, extra);
  }
  async function send(endpointId: string, payload: unknown = { hello: 'world' }) {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'test.event',
      payload,
    });
    assert.equal(res.status, 202);
    const body = await res.json();
    return body.deliveries[0].id as string;
  }
  async function settled(id: string, statuses = ['delivered', 'dead_letter']) {
    return waitFor(`delivery ${id} to settle`, async () => {
      const d = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      return statuses.includes(d.status) ? d : undefined;
    });
  }

  it('delivers signed requests that the official Standard Webhooks verifier accepts', async () => {
    const receiver = await startReceiver();
    const ep = await endpointFor(receiver, { headers: { 'X-Partner': 'acme' } });
    const raw = '{"amount": 1.50,  "currency":"EUR"}';
    const id = await send(ep.id, JSON.parse(raw));
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${ep.id}","event_type":"t","payload":${raw}}`,
    );
    const rawId = (await res.json()).deliveries[0].id;
    const delivered = await settled(rawId);
    assert.equal(delivered.status, 'delivered');
    await settled(id);
    const request = receiver.requests.find((r) => r.body.toString() === raw);
    assert.ok(request, 'the payload arrives byte for byte');
    const headers = request.headers as Record<string, string>;
    assert.equal(headers['content-type'], 'application/json');
    assert.match(headers['user-agent']!, /^hookpost\//);
    assert.equal(headers['x-partner'], 'acme');
    assert.equal(headers['webhook-id'], delivered.message_id);
    assert.ok(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000) < 30);
    new Webhook(ep.secret).verify(request.body.toString(), headers);
    assert.throws(() =>
      new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(request.body.toString(), headers),
    );
    assert.equal(delivered.attempts.length, 1);
    assert.equal(delivered.attempts[0].status_code, 200);
    assert.equal(delivered.attempts[0].response_snippet, 'ok');
  });

  it('signs with both secrets during a rotation', async () => {
    const receiver = await startReceiver();
    const ep = await endpointFor(receiver);
    const rotated = await (await t.send('POST', `/v1/endpoints/${ep.id}/rotate-secret`)).json();
    // No wait: the claim carries the endpoint's config version, so the next attempt sees the rotation.
    await settled(await send(ep.id));
    const request = receiver.requests.at(-1)!;
    const headers = request.headers as Record<string, string>;
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    new Webhook(ep.secret).verify(request.body.toString(), headers);
    new Webhook(rotated.secret).verify(request.body.toString(), headers);
  });

  it('retries 500s with the same webhook-id until a 200', async () => {
    let calls = 0;
    const receiver = await startReceiver((_req, res) => {
      calls++;
      res.writeHead(calls <= 2 ? 500 : 200).end(calls <= 2 ? 'broken' : 'fine');
    });
    const ep = await endpointFor(receiver);
    const d = await settled(await send(ep.id));
    assert.equal(d.status, 'delivered');
    assert.equal(d.attempt_count, 3);
    assert.deepEqual(
      d.attempts.map((a: { status_code: number }) => a.status_code),
      [500, 500, 200],
    );
    assert.equal(d.attempts[0].error_class, 'http_500');
    assert.equal(d.attempts[0].response_snippet, 'broken');
    assert.equal(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, 1);
  });

  it('dead-letters after HOOKPOST_MAX_ATTEMPTS when the endpoint always fails', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(503).end());
    const ep = await endpointFor(receiver);
    const d = await settled(await send(ep.id));
    assert.equal(d.status, 'dead_letter');
    assert.equal(d.attempts.length, 4);
    assert.equal(receiver.requests.length, 4);
    assert.equal(d.last_status_code, 503);
    assert.ok(d.dead_at);
  });

  it('dead-letters a 400 after one attempt', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(400).end('bad'));
    const ep = await endpointFor(receiver);
    const d = await settled(await send(ep.id));
    assert.equal(d.status, 'dead_letter');
    assert.equal(d.attempts.length, 1);
    assert.equal(d.last_error_class, 'http_400');
  });

  it('disables the endpoint on 410 Gone and keeps its queued deliveries', async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(410).end());
    const ep = await endpointFor(receiver);
    const first = await settled(await send(ep.id));
    assert.equal(first.status, 'dead_letter');
    const endpoint = await waitFor('endpoint disabled', async () => {
      const e = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
      return e.enabled === false ? e : undefined;
    });
    assert.match(endpoint.disabled_reason, /410/);
    const later = await send(ep.id);
    await new Promise((r) => setTimeout(r, 300));
    const kept = await (await t.send('GET', `/v1/deliveries/${later}`)).json();
    assert.equal(kept.status, 'pending', 'queued, not dropped');
    assert.equal(receiver.requests.length, 1, 'nothing sent to a disabled endpoint');
  });

  it('respects Retry-After on 429', async () => {
    let calls = 0;
    const receiver = await startReceiver((_req, res) => {
      calls++;
      if (calls === 1) res.writeHead(429, { 'retry-after': '1' }).end();
      else res.writeHead(200).end();
    });
    const ep = await endpointFor(receiver);
    const d = await settled(await send(ep.id));
    assert.equal(d.status, 'delivered');
    const gap = receiver.requests[1]!.at - receiver.requests[0]!.at;
    assert.ok(gap >= 950, `second attempt came ${gap} ms after the 429, expected >= 1000`);
  });

  it('does not follow redirects: 302 is a failure and the target gets nothing', async () => {
    const target = await startReceiver();
    receivers.push(target);
    const receiver = await startReceiver((_req, res) => res.writeHead(302, { location: target.url }).end());
    const ep = await endpointFor(receiver);
    const d = await settled(await send(ep.id));
    assert.equal(d.status, 'dead_letter');
    assert.equal(d.last_status_code, 302);
    assert.equal(target.requests.length, 0);
  });

  it('ends attempts at the deadline for silent and endless receivers', async () => {
    const silent = await startReceiver(() => {
      /* never answers */
    });
    const endless = await startReceiver((_req, res) => {
      res.writeHead(500);
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const a = await endpointFor(silent);
    const b = await endpointFor(endless);
    const [da, db2] = await Promise.all([settled(await send(a.id)), settled(await send(b.id))]);
    for (const d of [da, db2]) {
      assert.equal(d.status, 'dead_letter');
      assert.equal(d.attempts.length, 4);
      for (const attempt of d.attempts) {
        assert.ok(
          attempt.duration_ms >= 350 && attempt.duration_ms < 2000,
          `attempt took ${attempt.duration_ms} ms`,
        );
      }
    }
    assert.equal(da.attempts[0].error_class, 'timeout');
    assert.equal(db2.attempts[0].status_code, 500, 'the status line had arrived');
  });
});
