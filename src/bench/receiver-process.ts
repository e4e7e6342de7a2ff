/**
 * The benchmark's partner: an HTTP server in its own process (forked with an IPC channel; its
 * own event loop, so it can use the second core) that checks every request's signature and
 * records when each webhook-id arrived. Paths are /ep/<index>; the parent sends each endpoint's
 * signing key. A process rather than a worker thread so that its CPU time, garbage collector
 * and libuv threads included, can be read from /proc apart from the bench client's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

type Message =
  | { type: 'keys'; keys: string[]; perEndpoint?: boolean }
  | { type: 'reset' }
  | { type: 'count' }
  | { type: 'stats' }
  | { type: 'take' }
  | { type: 'close' };

const send = (message: object) => process.send!(message);

let keys: Buffer[] = [];
/** Fan-out: one message reaches several endpoints, so an arrival is `<webhook-id>@<endpoint index>`. */
let perEndpoint = false;
let arrivals = new Map<string, number>();
let duplicates = 0;
let badSignatures = 0;
let requests = 0;
/** Arrivals since the last 'take' (the soak reads them window by window instead of all at once). */
let recent: [string, number][] = [];

function validSignature(req: http.IncomingMessage, body: Buffer): boolean {
  const index = Number(req.url?.split('/')[2]);
  const key = keys[index];
  const id = req.headers['webhook-id'];
  const timestamp = req.headers['webhook-timestamp'];
  const header = req.headers['webhook-signature'];
  if (!key || typeof id !== 'string' || typeof timestamp !== 'string' || typeof header !== 'string')
    return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  return header.split(' ').some((part) => {
    const given = Buffer.from(part.slice(3), 'base64');
    return part.startsWith('v1,') && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** `bench --partner https|mtls`: PEM key, cert and (mTLS: client certificates required) CA. */
const tls = process.env.BENCH_RECEIVER_TLS
  ? (JSON.parse(process.env.BENCH_RECEIVER_TLS) as { key: string; cert: string; ca?: string })
  : undefined;

const handler: http.RequestListener = (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = performance.timeOrigin + performance.now();
    requests++;
    if (!validSignature(req, Buffer.concat(chunks))) badSignatures++;
    const id = perEndpoint
      ? `${req.headers['webhook-id']}@${req.url?.split('/')[2]}`
      : String(req.headers['webhook-id']);
    if (arrivals.has(id)) duplicates++;
    else {
      arrivals.set(id, now);
      recent.push([id, now]);
    }
    res.writeHead(200, { 'content-length': '2' }).end('ok');
  });
};
const server = tls
  ? https.createServer({ ...tls, requestCert: tls.ca !== undefined, rejectUnauthorized: true }, handler)
  : http.createServer(handler);
server.keepAliveTimeout = 60_000;

server.listen(0, '127.0.0.1', () => {
  send({ type: 'listening', port: (server.address() as AddressInfo).port });
});

process.on('message', (message: Message) => {
  if (message.type === 'keys') {
    keys = message.keys.map((k) => Buffer.from(k, 'base64'));
    perEndpoint = message.perEndpoint === true;
  }
  if (message.type === 'reset') {
    arrivals = new Map();
    recent = [];
    duplicates = 0;
    badSignatures = 0;
    requests = 0;
  }
  if (message.type === 'take') {
    send({ type: 'taken', arrivals: recent, duplicates, badSignatures });
    recent = [];
  }
  if (message.type === 'count') send({ type: 'count', count: arrivals.size });
  if (message.type === 'stats') {
    send({ type: 'stats', requests, duplicates, badSignatures, arrivals: [...arrivals] });
  }
  if (message.type === 'close') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
// A bench that dies half-way closes the channel: do not stay behind listening.
process.on('disconnect', () => process.exit(0));
