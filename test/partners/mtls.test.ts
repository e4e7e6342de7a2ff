import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { announceExpiringCertificates } from '../../src/endpoints/certificate-expiry.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { type Authority, type CertificateFactory, certificateFactory, type Issued } from './certificates.js';

const KEY = 'mtls-test-key-0123456789abcdef';
const skip = skipUnlessInstalled(['openssl'], 'apt-get install -y openssl');

interface TlsReceiver {
  url: string;
  /** Client certificate subjects (CN) of the requests received. */
  received: string[];
  /** TLS connections that completed a handshake. */
  connections: number;
  close(): Promise<void>;
}

/** An HTTPS server on 127.0.0.1 that requires a client certificate signed by `clientCa`. */
async function startTlsReceiver(server: Issued, clientCa: Authority): Promise<TlsReceiver> {
  const state = { received: [] as string[], connections: 0 };
  const httpsServer = https.createServer(
    { cert: server.cert, key: server.key, ca: clientCa.cert, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      req.resume();
      req.on('end', () => {
        state.received.push(String(peer.subject?.CN));
        res.writeHead(200).end('ok');
      });
    },
  );
  httpsServer.on('secureConnection', () => state.connections++);
  await new Promise<void>((resolve) => httpsServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpsServer.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}/hook`,
    get received() {
      return state.received;
    },
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        httpsServer.closeAllConnections();
        httpsServer.close(() => resolve());
      }),
  };
}

describe('tls: a private CA and client certificates (mTLS), against a real TLS server', { skip }, () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let certs: CertificateFactory;
  let partnerCa: Authority;
  let otherCa: Authority;
  let client: Issued;
  let receiver: TlsReceiver;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    certs = certificateFactory();
    partnerCa = certs.ca('Partner Private CA');
    otherCa = certs.ca('Some Other CA');
    client = partnerCa.issue('hookpost-client');
    receiver = await startTlsReceiver(partnerCa.issue('127.0.0.1', { server: true }), partnerCa);
    closers.push(receiver.close);
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_SECRET_KEY: KEY,
      HOOKPOST_REQUEST_TIMEOUT_MS: '2000',
    });
  });
  after(async () => {
    await dispatcher.stop();
    for (const close of closers) await close();
    await db.drop();
    certs.cleanup();
  });

  const mtls = () => ({
    ca_certificates: partnerCa.cert,
    client_certificate: client.cert,
    client_key: client.key,
  });

  async function deliver(endpointId: string) {
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 'x',
      payload: { a: 1 },
    });
    const id = (await res.json()).deliveries[0].id as string;
    return waitFor(`delivery ${id} to settle`, async () => {
      const d = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      return ['delivered', 'dead_letter'].includes(d.status) ? d : undefined;
    });
  }

  it('shows subject, fingerprint and expiry of each certificate, never the key, and seals the key', async () => {
    const ep = await createEndpoint(t, receiver.url, { tls: mtls() });
    const read = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.equal(read.tls.client_certificate.subject, 'CN=hookpost-client');
    assert.equal(read.tls.client_certificate.issuer, 'CN=Partner Private CA');
    assert.match(read.tls.client_certificate.fingerprint_sha256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.ok(Date.parse(read.tls.client_certificate.not_after) > Date.now());
    assert.equal(read.tls.ca_certificates[0].subject, 'CN=Partner Private CA');
    assert.match(read.tls.client_key, /^••••••/);
    const text = JSON.stringify(read);
    assert.ok(!text.includes('PRIVATE KEY') && !text.includes(client.key.slice(40, 80)), 'no key on reads');
    const [row] = await db.sql`SELECT tls FROM endpoints WHERE id = ${ep.id}`;
    assert.match(row!.tls.client_key, /^v2:[0-9a-f]{12}:/);
    assert.ok(!JSON.stringify(row).includes('PRIVATE KEY'), 'the key is sealed at rest');
  });

  it('refuses a key of another certificate, an encrypted key, a non-CA bundle and tls on http', async () => {
    const other = partnerCa.issue('someone-else');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ tls: { ...mtls(), client_key: other.key } }, /^tls\.client_key: does not belong/],
      [{ tls: { ...mtls(), client_key: certs.encryptedKey() } }, /^tls\.client_key: is encrypted/],
      [{ tls: { ca_certificates: client.cert } }, /^tls\.ca_certificates: certificate 1 is not a CA/],
      [{ tls: { ca_certificates: 'not a pem' } }, /^tls\.ca_certificates: must be a PEM certificate/],
      [{ tls: { client_certificate: client.cert } }, /^tls\.client_key: is required/],
    ];
    for (const [body, message] of cases) {
      const res = await t.send('POST', '/v1/endpoints', { url: receiver.url, ...body });
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
      assert.match((await res.json()).error.message, message);
    }
    const http = await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x', tls: mtls() });
    assert.match((await http.json()).error.message, /^tls: applies to https URLs only/);
  });

  it('delivers over mTLS to a server trusted through the private CA, reusing one connection', async () => {
    const ep = await createEndpoint(t, receiver.url, { tls: mtls() });
    const before = receiver.connections;
    for (let i = 0; i < 4; i++) assert.equal((await deliver(ep.id)).status, 'delivered');
    assert.deepEqual(receiver.received.slice(-4), Array(4).fill('hookpost-client'));
    assert.equal(receiver.connections - before, 1, 'one handshake for four sequential deliveries');
  });

  it('a masked key sent back keeps it; a new certificate and key replace both', async () => {
    const ep = await createEndpoint(t, receiver.url, { tls: mtls() });
    const read = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    const kept = await t.send('PATCH', `/v1/endpoints/${ep.id}`, {
      tls: { client_key: read.tls.client_key },
    });
    assert.equal(kept.status, 200);
    assert.equal((await deliver(ep.id)).status, 'delivered');
    const renewed = partnerCa.issue('hookpost-client-2');
    const res = await t.send('PATCH', `/v1/endpoints/${ep.id}`, {
      tls: { client_certificate: renewed.cert, client_key: renewed.key },
    });
    assert.equal((await res.json()).tls.client_certificate.subject, 'CN=hookpost-client-2');
    assert.equal((await deliver(ep.id)).status, 'delivered');
    assert.equal(
      receiver.received.at(-1),
      'hookpost-client-2',
      'the next attempt presents the new certificate',
    );
  });

  it('fails with tls_error and the reason for a wrong CA, a missing client certificate, an expired server', async () => {
    const expired = await startTlsReceiver(
      partnerCa.issue('127.0.0.1', { server: true, days: -1 }),
      partnerCa,
    );
    closers.push(expired.close);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        receiver.url,
        { ca_certificates: otherCa.cert, client_certificate: client.cert, client_key: client.key },
        /^tls_error: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/,
      ],
      [
        receiver.url,
        { ca_certificates: partnerCa.cert },
        /^tls_error: ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|^tls_error|^connection_reset/,
      ],
      [expired.url, mtls(), /^tls_error: CERT_HAS_EXPIRED/],
    ];
    for (const [url, tls, error] of cases) {
      const received = receiver.received.length + expired.received.length;
      const ep = await createEndpoint(t, url, { tls, max_attempts: 1 });
      const delivery = await deliver(ep.id);
      assert.equal(delivery.status, 'dead_letter');
      assert.match(delivery.attempts[0].error, error);
      assert.equal(receiver.received.length + expired.received.length, received, 'nothing was received');
    }
    // Without a CA of its own the endpoint trusts the public CAs only: a private server is refused.
    const publicOnly = await createEndpoint(t, receiver.url, {
      tls: { client_certificate: client.cert, client_key: client.key },
      max_attempts: 1,
    });
    assert.match((await deliver(publicOnly.id)).attempts[0].error, /^tls_error/);
  });

  it('warns 14 days before a client certificate expires: health, and one operational event a day', async () => {
    const ops = await createEndpoint(t, 'http://127.0.0.1:9/ops', {
      tenant_id: 'hookpost',
      event_types: ['endpoint.certificate_expiring'],
    });
    await t.send('PATCH', `/v1/endpoints/${ops.id}`, { enabled: false });
    const soon = partnerCa.issue('expiring-soon', { days: 7 });
    const ep = await createEndpoint(t, receiver.url, {
      tls: { ca_certificates: partnerCa.cert, client_certificate: soon.cert, client_key: soon.key },
    });
    const fine = await createEndpoint(t, receiver.url, { tls: mtls() });
    const health = await (await t.send('GET', `/v1/endpoints/${ep.id}/health`)).json();
    assert.equal(health.certificate_expiring, true);
    assert.ok(Date.parse(health.client_certificate_expires_at) - Date.now() < 8 * 86_400_000);
    const fineHealth = await (await t.send('GET', `/v1/endpoints/${fine.id}/health`)).json();
    assert.equal(fineHealth.certificate_expiring, false);

    await t.send('PATCH', `/v1/endpoints/${ops.id}`, { enabled: true });
    await db.sql`UPDATE endpoints SET certificate_warned_at = NULL WHERE id = ${ep.id}`;
    assert.equal(await announceExpiringCertificates(db.sql), 1);
    assert.equal(await announceExpiringCertificates(db.sql), 0, 'once a day at most');
    const events = await db.sql<{ payload: Buffer }[]>`
      SELECT payload FROM messages WHERE tenant_id = 'hookpost' AND event_type = 'endpoint.certificate_expiring'`;
    assert.equal(events.length, 1);
    const event = JSON.parse(events[0]!.payload.toString());
    assert.equal(event.data.endpoint_id, ep.id);
    assert.ok(event.data.days_left <= 7 && event.data.days_left >= 6, String(event.data.days_left));
    // A day later it is announced again; a renewed certificate starts afresh.
    await db.sql`UPDATE endpoints SET certificate_warned_at = now() - interval '25 hours' WHERE id = ${ep.id}`;
    assert.equal(await announceExpiringCertificates(db.sql), 1);
    await t.send('PATCH', `/v1/endpoints/${ep.id}`, {
      tls: { client_certificate: client.cert, client_key: client.key },
    });
    assert.equal(await announceExpiringCertificates(db.sql), 0);
    const [row] = await db.sql`SELECT certificate_warned_at FROM endpoints WHERE id = ${ep.id}`;
    assert.equal(row!.certificate_warned_at, null);
  });
});
