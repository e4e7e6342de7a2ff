/**
 * Name resolution at send time, against a real DNS server on 127.0.0.1 (test/dispatch/dns-server.ts):
 * a partner whose DNS never answers must not hold up deliveries to others, answers are cached for
 * their TTL, and the SSRF guard sees every address a name resolves to before any connection.
 * Also here: a request undici refuses outright (a bad stored header) fails for good at once.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { DnsCache } from '../../src/dispatch/dns.js';
import { Sender, type SenderOptions } from '../../src/dispatch/sender.js';
import {
  createTestApp,
  createTestDatabase,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';

/** A receiver that also counts TCP connections, so "no connection made" can be asserted. */
async function countingReceiver() {
  let connections = 0;
  let requests = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    res.writeHead(200).end('ok');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('DNS at send time', () => {
  let dnsServer: TestDnsServer;
  let receiver: Awaited<ReturnType<typeof countingReceiver>>;
  const senders: Sender[] = [];
  const sender = (options: Partial<SenderOptions> = {}) => {
    const s = new Sender({
      timeoutMs: 3000,
      snippetBytes: 64,
      allowPrivateTargets: true,
      connectionsPerOrigin: 8,
      userAgent: 'hookpost/test',
      dnsServers: [dnsServer.address],
      ...options,
    });
    senders.push(s);
    return s;
  };
  const post = (s: Sender, host: string) =>
    s.send({ url: `http://${host}:${receiver.port}/hook`, headers: {}, body: Buffer.from('{}') });

  before(async () => {
    receiver = await countingReceiver();
    const hanging = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`hang${i}.test`, 'hang' as const]),
    );
    dnsServer = await startDnsServer({
      ...hanging,
      'good.test': { a: ['127.0.0.1'], ttl: 60 },
      'short.test': { a: ['127.0.0.1'], ttl: 1 },
      'evil.test': { a: ['127.0.0.1'] },
      'mixed.test': { a: ['93.184.216.34', '127.0.0.1'] },
      'v6.test': { aaaa: ['::7f00:1'] },
      'nat64.test': { aaaa: ['64:ff9b::7f00:1'] },
    });
  });
  after(async () => {
    await Promise.all(senders.map((s) => s.close()));
    await receiver.close();
    await dnsServer.close();
  });

  it('delivers to other endpoints while 16 names hang in DNS', async () => {
    const s = sender();
    let hangingDone = 0;
    const hanging = Array.from({ length: 16 }, (_, i) =>
      post(s, `hang${i}.test`).then((r) => {
        hangingDone++;
        return r;
      }),
    );
    // libuv has four threads: with getaddrinfo these 16 lookups would queue every other name.
    await waitFor('the hanging queries to reach the server', () => dnsServer.queries.get('hang15.test/A'));
    for (let i = 0; i < 10; i++) {
      const result = await post(s, 'good.test');
      assert.equal(result.outcome.kind, 'success', JSON.stringify(result));
    }
    assert.equal(hangingDone, 0, 'the good deliveries finished while every hanging lookup was still waiting');
    for (const result of await Promise.all(hanging)) {
      assert.equal(result.outcome.kind, 'retryable', 'a hanging resolver ends at the attempt deadline');
      assert.ok(['timeout', 'dns_error'].includes(result.error ?? ''), result.error ?? '');
    }
  });

  it('caches answers for their TTL, at most the configured maximum, and asks again after', async () => {
    const cache = new DnsCache({ servers: [dnsServer.address], timeoutMs: 3000, maxTtlSeconds: 300 });
    const capped = new DnsCache({ servers: [dnsServer.address], timeoutMs: 3000, maxTtlSeconds: 1 });
    const count = (name: string) => dnsServer.queries.get(`${name}/A`) ?? 0;
    const good = count('good.test');
    const results = await Promise.all(Array.from({ length: 20 }, () => cache.resolve('good.test')));
    assert.deepEqual(results[0], [{ address: '127.0.0.1', family: 4 }]);
    await cache.resolve('GOOD.test');
    assert.equal(count('good.test'), good + 1, 'twenty-one lookups, one query');

    await cache.resolve('short.test');
    await cache.resolve('short.test');
    assert.equal(count('short.test'), 1, 'within the TTL of 1 s');
    await capped.resolve('good.test');
    await new Promise((r) => setTimeout(r, 1200));
    await cache.resolve('short.test');
    assert.equal(count('short.test'), 2, 'asked again once the TTL ran out');
    await capped.resolve('good.test');
    assert.equal(count('good.test'), good + 3, 'a TTL of 60 s is cut to the 1 s maximum');
    await cache.resolve('good.test');
    assert.equal(count('good.test'), good + 3, 'and kept in full where the maximum allows');
  });

  it('bounds a lookup by the attempt deadline', async () => {
    const cache = new DnsCache({ servers: [dnsServer.address], timeoutMs: 300, maxTtlSeconds: 300 });
    await assert.rejects(cache.resolve('hang0.test'), { code: 'ETIMEOUT' });
    await assert.rejects(cache.resolve('nowhere.test'), (error: NodeJS.ErrnoException) =>
      ['ENOTFOUND', 'EAI_AGAIN', 'ETIMEOUT'].includes(error.code ?? ''),
    );
  });

  it('refuses a name that resolves to loopback at send time, with no connection made', async () => {
    const s = sender({ allowPrivateTargets: false });
    const connectionsBefore = receiver.connections;
    for (const host of ['evil.test', 'mixed.test', 'v6.test', 'nat64.test', 'evil.test']) {
      const result = await post(s, host);
      assert.deepEqual(
        result.outcome,
        { kind: 'permanent', errorClass: 'private_address_blocked' },
        `${host}: ${JSON.stringify(result)}`,
      );
    }
    assert.equal(receiver.connections, connectionsBefore, 'not one connection reached the receiver');
    assert.equal(
      dnsServer.queries.get('evil.test/A'),
      1,
      'the second try came from the cache, still checked',
    );
  });
});

describe('a request undici refuses to send', () => {
  it('is a permanent invalid_request, not five days of network_error', async () => {
    const receiver = await countingReceiver();
    const sender = new Sender({
      timeoutMs: 3000,
      snippetBytes: 64,
      allowPrivateTargets: true,
      connectionsPerOrigin: 1,
      userAgent: 'hookpost/test',
    });
    try {
      // A header value stored before the API refused them (U+20AC is beyond latin1).
      const result = await sender.send({
        url: `http://127.0.0.1:${receiver.port}/hook`,
        headers: { 'x-price': '5 \u20ac' },
        body: Buffer.from('{}'),
      });
      assert.deepEqual(result.outcome, { kind: 'permanent', errorClass: 'invalid_request' });
      assert.equal(receiver.requests, 0);
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});

describe('HOOKPOST_DNS_SERVERS', () => {
  let db: TestDatabase;
  let dnsServer: TestDnsServer;
  before(async () => {
    db = await createTestDatabase();
    dnsServer = await startDnsServer({
      'partner.test': { a: ['127.0.0.1'] },
      'rebound.test': { a: ['127.0.0.1'], ttl: 0 },
    });
  });
  after(async () => {
    await dnsServer.close();
    await db.drop();
  });

  it('is the resolver the dispatcher uses for partner names', async () => {
    const receiver = await startReceiver();
    const env = { HOOKPOST_DNS_SERVERS: dnsServer.address };
    const t = await createTestApp(db, env);
    const dispatcher = await startTestDispatcher(db, env);
    try {
      const url = receiver.url.replace('127.0.0.1', 'partner.test');
      const ep = await (await t.send('POST', '/v1/endpoints', { url })).json();
      const res = await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'x',
        payload: { a: 1 },
      });
      assert.equal(res.status, 202);
      await waitFor('the delivery', () => receiver.requests.length === 1);
      assert.equal(dnsServer.queries.get('partner.test/A'), 1);
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });

  it('dead-letters a delivery whose name resolves to loopback at send time; nothing reaches it', async () => {
    const receiver = await startReceiver();
    const env = { HOOKPOST_DNS_SERVERS: dnsServer.address, HOOKPOST_ALLOW_PRIVATE_TARGETS: 'false' };
    const t = await createTestApp(db, env);
    const dispatcher = await startTestDispatcher(db, env);
    try {
      // The name passes the create-time check (it is not a literal address); DNS decides at send time.
      const url = receiver.url.replace('127.0.0.1', 'rebound.test');
      const created = await t.send('POST', '/v1/endpoints', { url });
      assert.equal(created.status, 201);
      const ep = await created.json();
      const res = await t.send('POST', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'x',
        payload: {},
      });
      const id = (await res.json()).deliveries[0].id;
      const delivery = await waitFor('the dead letter', async () => {
        const d = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
        return d.status === 'dead_letter' ? d : undefined;
      });
      assert.equal(delivery.last_error_class, 'private_address_blocked');
      assert.equal(receiver.requests.length, 0);
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });

  it('refuses a server list c-ares cannot use, naming the variable', () => {
    assert.throws(
      () => loadConfig({ HOOKPOST_DNS_SERVERS: '127.0.0.1,not-an-address' }),
      /HOOKPOST_DNS_SERVERS/,
    );
    assert.deepEqual(loadConfig({ HOOKPOST_DNS_SERVERS: ' 127.0.0.1:5353, [::1]:53 ' }).dnsServers, [
      '127.0.0.1:5353',
      '[::1]:53',
    ]);
  });
});
