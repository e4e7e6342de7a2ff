import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { parseProxyUrl } from '../../src/dispatch/egress-proxy.js';
import { Sender } from '../../src/dispatch/sender.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { startDnsServer, type TestDnsServer } from '../dispatch/dns-server.js';
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
import { skipUnlessInstalled } from '../system-binary.js';
import { certificateFactory } from './certificates.js';
import { startTinyproxy, type Tinyproxy } from './tinyproxy.js';

const skip = skipUnlessInstalled(['tinyproxy', 'openssl'], 'apt-get install -y tinyproxy openssl');

function sender(
  proxyUrl: string,
  extra: { allowPrivateTargets?: boolean; dnsServers?: string[] } = {},
): Sender {
  return new Sender({
    timeoutMs: 3000,
    snippetBytes: 256,
    allowPrivateTargets: extra.allowPrivateTargets ?? true,
    connectionsPerOrigin: 4,
    userAgent: 'hookpost/test',
    dnsServers: extra.dnsServers,
    egressProxy: parseProxyUrl(proxyUrl),
  });
}

const post = (s: Sender, url: string) =>
  s.send({ url, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') });

describe('HOOKPOST_EGRESS_PROXY through a real CONNECT proxy (tinyproxy)', { skip }, () => {
  let proxy: Tinyproxy;
  let dns: TestDnsServer;
  let receiver: Receiver;
  const senders: Sender[] = [];

  before(async () => {
    proxy = await startTinyproxy();
    receiver = await startReceiver();
    dns = await startDnsServer({ 'partner.test': { a: ['127.0.0.1'], ttl: 60 } });
  });
  after(async () => {
    await Promise.all(senders.map((s) => s.close()));
    await receiver.close();
    await dns.close();
    await proxy.cleanup();
  });

  it('sends through the proxy, naming the vetted address in CONNECT and the name in Host', async () => {
    const s = sender(proxy.url, { dnsServers: [dns.address] });
    senders.push(s);
    const port = new URL(receiver.url).port;
    const result = await post(s, `http://partner.test:${port}/hook`);
    assert.equal(result.outcome.kind, 'success', result.error ?? '');
    assert.ok(proxy.connects().includes(`127.0.0.1:${port}`), proxy.connects().join(' '));
    assert.ok(!proxy.connects().some((c) => c.startsWith('partner.test')), 'the proxy never resolves a name');
    assert.equal(receiver.requests.at(-1)!.headers.host, `partner.test:${port}`);
  });

  it('runs TLS inside the tunnel with the name as SNI: a private CA and a client certificate (mTLS)', async () => {
    const certs = certificateFactory();
    const ca = certs.ca('Partner CA');
    const client = ca.issue('hookpost-client');
    const seen: { sni: string | undefined; client: string | undefined }[] = [];
    const server = https.createServer(
      {
        ...ca.issue('partner.test', { server: true, dnsName: 'partner.test' }),
        ca: ca.cert,
        requestCert: true,
      },
      (req, res) => {
        const socket = req.socket as TLSSocket;
        seen.push({
          sni: (socket as unknown as { servername?: string }).servername,
          client: String(socket.getPeerCertificate().subject?.CN),
        });
        req.resume();
        res.writeHead(200).end();
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = sender(proxy.url, { dnsServers: [dns.address] });
      senders.push(s);
      const port = (server.address() as AddressInfo).port;
      const tls = { key: 'mtls-through-proxy', ca: ca.cert, cert: client.cert, privateKey: client.key };
      const result = await s.send({
        url: `https://partner.test:${port}/hook`,
        headers: {},
        body: Buffer.from('{}'),
        tls,
      });
      assert.equal(result.outcome.kind, 'success', result.error ?? '');
      assert.deepEqual(seen, [{ sni: 'partner.test', client: 'hookpost-client' }]);
      assert.ok(proxy.connects().includes(`127.0.0.1:${port}`));
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      certs.cleanup();
    }
  });

  it('keeps the SSRF guard: a name resolving to a private address never reaches the proxy', async () => {
    const s = sender(proxy.url, { allowPrivateTargets: false, dnsServers: [dns.address] });
    senders.push(s);
    const before = proxy.connects().length;
    const result = await post(s, 'http://partner.test:9/hook');
    assert.equal(result.outcome.kind, 'permanent');
    assert.equal(result.outcome.kind === 'permanent' && result.outcome.errorClass, 'private_address_blocked');
    assert.equal(proxy.connects().length, before, 'no CONNECT was made');
  });

  it('a proxy that is down, or refuses the tunnel, is proxy_unavailable; one that cannot reach the host is the host', async () => {
    const down = sender('http://127.0.0.1:9');
    senders.push(down);
    const refused = await post(down, receiver.url);
    assert.equal(refused.outcome.kind !== 'success' && refused.outcome.errorClass, 'proxy_unavailable');
    assert.match(refused.error!, /^proxy_unavailable: proxy unreachable \(ECONNREFUSED\)/);

    const guarded = await startTinyproxy({ user: 'hook', pass: 'proxy-pass-SECRET' });
    try {
      const noCredentials = sender(`http://127.0.0.1:${guarded.port}`);
      const withCredentials = sender(guarded.url);
      senders.push(noCredentials, withCredentials);
      const denied = await post(noCredentials, receiver.url);
      assert.match(denied.error!, /^proxy_unavailable: proxy refused the tunnel \(HTTP 407\)/);
      assert.equal((await post(withCredentials, receiver.url)).outcome.kind, 'success');
    } finally {
      await guarded.cleanup();
    }

    const s = sender(proxy.url);
    senders.push(s);
    const closed = await post(s, 'http://127.0.0.1:9/nothing-listens');
    assert.equal(closed.outcome.kind !== 'success' && closed.outcome.errorClass, 'connection_refused');
  });
});

describe('a proxy outage longer than the retry budget costs deliveries nothing', { skip }, () => {
  let db: TestDatabase;
  let proxy: Tinyproxy;
  let receiver: Receiver;

  before(async () => {
    // With a password, so the metrics check below has something it could leak.
    proxy = await startTinyproxy({ user: 'hook', pass: 'proxy-pass-SECRET' });
    receiver = await startReceiver();
    db = await createTestDatabase();
  });
  after(async () => {
    await receiver.close();
    await proxy.cleanup();
    await db.drop();
  });

  it('hands attempts back uncharged while the proxy is down, counts them, and delivers once it is back', async () => {
    const t = await createTestApp(db);
    const metrics = createMetrics();
    const dispatcher = await startTestDispatcher(
      db,
      { HOOKPOST_EGRESS_PROXY: proxy.url, HOOKPOST_BREAKER_THRESHOLD: '2' },
      { metrics },
    );
    try {
      const ep = await createEndpoint(t, receiver, { max_attempts: 2 });
      await proxy.stop();
      const res = await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'x',
        payload: { a: 1 },
      });
      const id = (await res.json()).deliveries[0].id as string;
      const counted = async () =>
        (await metrics.registry.getSingleMetric('hookpost_egress_proxy_unavailable_total')!.get()).values[0]
          ?.value ?? 0;
      // Far more tries than max_attempts (2) and the breaker's threshold (2).
      await waitFor('ten tries against the stopped proxy', async () => (await counted()) >= 10);
      const delivery = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      assert.notEqual(delivery.status, 'dead_letter');
      assert.equal(delivery.attempts.length, 0, 'no attempt was charged or logged');
      const health = await (await t.send('GET', `/v1/endpoints/${ep.id}/health`)).json();
      assert.equal(health.state, 'closed', 'the circuit was not told');
      assert.equal(receiver.requests.length, 0);

      await proxy.start();
      await waitFor('the delivery after the proxy is back', async () => {
        const d = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
        return d.status === 'delivered';
      });
      const done = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      assert.equal(done.attempts.length, 1);
      assert.equal(receiver.requests.length, 1);
      const text = await metrics.registry.metrics();
      assert.ok(!text.includes('proxy-pass'), 'no proxy credential in the metrics');
    } finally {
      await dispatcher.stop();
    }
  });

  it('refuses a HOOKPOST_EGRESS_PROXY it cannot use, without repeating its password', async () => {
    const { loadConfig } = await import('../../src/config.js');
    assert.throws(
      () => loadConfig({ HOOKPOST_EGRESS_PROXY: 'https://u:SECRETPASS@proxy:3128' }),
      (e: Error) =>
        /HOOKPOST_EGRESS_PROXY is invalid: must be an http:\/\/ URL/.test(e.message) &&
        !e.message.includes('SECRETPASS'),
    );
    assert.equal(loadConfig({ HOOKPOST_EGRESS_PROXY: 'http://u:p@proxy:3128' }).egressProxy?.port, 3128);
  });
});
