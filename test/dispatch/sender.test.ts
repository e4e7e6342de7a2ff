/**
 * The Sender against real receivers on 127.0.0.1, without a database: what one attempt reads
 * from a response (status, Retry-After, the snippet), where it stops reading, and how it ends
 * at its deadline or at shutdown. The dispatcher's tests cover the same paths end to end.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { Sender } from '../../src/dispatch/sender.js';
import { type Receiver, startReceiver } from '../helpers.js';

const sender = new Sender({
  timeoutMs: 1_000,
  snippetBytes: 16,
  allowPrivateTargets: true,
  connectionsPerOrigin: 4,
  userAgent: 'hookpost-test',
});
const receivers: Receiver[] = [];
after(async () => {
  await sender.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(handler: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(handler);
  receivers.push(r);
  return r;
}

const send = (url: string) =>
  sender.send({ url, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"a":1}') });

describe('sender', () => {
  it('sends the body and headers, and keeps the first bytes of the answer', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end('accepted, thank you very much'));
    const result = await send(r.url);
    assert.deepEqual(result.outcome, { kind: 'success', statusCode: 200 });
    assert.equal(result.snippet, 'accepted, thank ');
    assert.equal(result.error, null);
    assert.equal(r.requests[0]?.body.toString(), '{"a":1}');
    assert.equal(r.requests[0]?.headers['user-agent'], 'hookpost-test');
  });

  it('reads Retry-After and a chunked body, and skips an informational answer', async () => {
    const r = await receiver((_req, res) => {
      res.writeEarlyHints({ link: '</x>; rel=preload' });
      res.writeHead(503, { 'retry-after': '7' });
      res.write('busy ');
      setTimeout(() => res.end('try later'), 20);
    });
    const result = await send(r.url);
    assert.deepEqual(result.outcome, {
      kind: 'retryable',
      statusCode: 503,
      errorClass: 'http_503',
      retryAfterSeconds: 7,
    });
    assert.equal(result.snippet, 'busy try later');
    assert.equal(result.error, 'HTTP 503');
  });

  it('stops reading a huge answer, keeps its status, and the origin stays usable', async () => {
    let calls = 0;
    const r = await receiver((_req, res) => {
      calls += 1;
      if (calls > 1) return void res.writeHead(200).end('small');
      res.writeHead(500);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = setInterval(() => res.write(chunk), 1);
      res.on('close', () => clearInterval(pump));
    });
    const started = Date.now();
    const huge = await send(r.url);
    assert.equal(huge.outcome.kind, 'retryable');
    assert.equal(huge.outcome.kind === 'retryable' && huge.outcome.statusCode, 500);
    assert.equal(huge.snippet, 'x'.repeat(16));
    assert.ok(Date.now() - started < 900, 'cut at the drain limit, not at the deadline');
    const next = await send(r.url);
    assert.deepEqual(next.outcome, { kind: 'success', statusCode: 200 });
    assert.equal(next.snippet, 'small');
  });

  it('ends a silent attempt at its deadline, and an attempt in progress at shutdown', async () => {
    const silent = await receiver(() => {
      /* never answers */
    });
    const timedOut = await send(silent.url);
    assert.deepEqual(timedOut.outcome, { kind: 'retryable', errorClass: 'timeout' });
    assert.ok(timedOut.durationMs >= 950 && timedOut.durationMs < 1_900, `${timedOut.durationMs} ms`);

    const local = new Sender({
      timeoutMs: 5_000,
      snippetBytes: 16,
      allowPrivateTargets: true,
      connectionsPerOrigin: 4,
      userAgent: 'hookpost-test',
    });
    const pending = local.send({ url: silent.url, headers: {}, body: Buffer.from('{}') });
    await new Promise((resolve) => setTimeout(resolve, 100));
    local.abortAll();
    const stopped = await pending;
    assert.deepEqual(stopped.outcome, { kind: 'shutdown', errorClass: 'shutdown' });
    assert.ok(stopped.durationMs < 1_000, `${stopped.durationMs} ms`);
    await local.close();
  });

  it('classifies a refused connection without an answer', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as net.AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await send(`http://127.0.0.1:${port}/hook`);
    assert.deepEqual(result.outcome, { kind: 'retryable', errorClass: 'connection_refused' });
    assert.equal(result.snippet, null);
  });
});
