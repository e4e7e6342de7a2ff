/**
 * `hookpost bench --partner MODE`: the bench's endpoints reach the receiver the way an
 * enterprise partner asks (issue 29), so the cost per delivery of each way can be compared with
 * the default in interleaved runs:
 *   basic  every endpoint sends `Authorization: Basic`;
 *   oauth  OAuth2 client credentials against a real oidc-provider on loopback (a devDependency:
 *          run from a checkout); the token is fetched once and then served from the cache;
 *   https  the receiver speaks HTTPS with a certificate from a private CA the endpoints trust;
 *   mtls   the same, and the receiver requires a client certificate the endpoints present;
 *   proxy  the dispatcher sends through a local tinyproxy (HOOKPOST_EGRESS_PROXY).
 * Certificates are made with the openssl command, the proxy is Debian's tinyproxy; both are
 * started here and removed by `close()`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { CostPart } from './cost.js';
import { processCpuSeconds } from './proc-stat.js';

export const PARTNER_MODES = ['basic', 'oauth', 'https', 'mtls', 'proxy'] as const;
export type PartnerMode = (typeof PARTNER_MODES)[number];

/** PEM text for the receiver's HTTPS server (`requestCert` when `ca` is given). */
export interface ReceiverTls {
  key: string;
  cert: string;
  ca?: string;
}

export interface PartnerSetup {
  /** Fields added to every bench endpoint at create. */
  endpointFields: Record<string, unknown>;
  receiverTls: ReceiverTls | undefined;
  /** Environment of the dispatcher process. */
  dispatcherEnv: Record<string, string>;
  /** Parts that are neither hookpost nor the receiver (the proxy). */
  parts: CostPart[];
  close(): Promise<void>;
}

/** A private CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function makeCertificates(dir: string) {
  const f = (name: string) => path.join(dir, name);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl([
    ...['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-subj', '/CN=bench CA'],
    ...['-days', '60', '-addext', 'basicConstraints=critical,CA:TRUE'],
    ...['-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
  ]);
  const leaf = (name: string, ext: string) => {
    openssl(['req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`]);
    writeFileSync(f(`${name}.ext`), ext);
    openssl([
      ...['x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.pem'), '-CAkey', f('ca.key')],
      ...['-CAcreateserial', '-out', f(`${name}.pem`), '-days', '60', '-extfile', f(`${name}.ext`)],
    ]);
    return { cert: readFileSync(f(`${name}.pem`), 'utf8'), key: readFileSync(f(`${name}.key`), 'utf8') };
  };
  return {
    ca: readFileSync(f('ca.pem'), 'utf8'),
    server: leaf('server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'),
    client: leaf('client', 'extendedKeyUsage=clientAuth\n'),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** tinyproxy in the foreground on loopback, allowing as many clients as the dispatcher opens. */
async function startTinyproxy(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const conf = path.join(dir, 'tinyproxy.conf');
  writeFileSync(
    conf,
    `Port ${port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 2048\nLogLevel Warning\nAllow 127.0.0.1\n`,
  );
  const child = spawn('tinyproxy', ['-d', '-c', conf], { stdio: 'ignore' });
  child.once('error', () => {});
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error('tinyproxy did not start (apt-get install -y tinyproxy)');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url: `http://127.0.0.1:${port}` };
}

/** A real OAuth2 authorization server (oidc-provider), client credentials only, tokens for an hour. */
async function startAuthServer(secret: string): Promise<{ tokenUrl: string; close(): Promise<void> }> {
  let Provider: typeof import('oidc-provider').default;
  try {
    Provider = (await import('oidc-provider')).default;
  } catch {
    throw new Error(
      '--partner oauth needs the oidc-provider devDependency (run from a checkout after npm ci)',
    );
  }
  const server = http.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [
      {
        client_id: 'hookpost-bench',
        client_secret: secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'webhooks',
      },
    ],
    scopes: ['webhooks'],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    ttl: { ClientCredentials: 3600 },
  });
  server.on('request', provider.callback());
  return {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function setUpPartner(mode: PartnerMode | undefined): Promise<PartnerSetup> {
  const none: PartnerSetup = {
    endpointFields: {},
    receiverTls: undefined,
    dispatcherEnv: {},
    parts: [],
    close: async () => {},
  };
  if (mode === undefined) return none;
  if (mode === 'basic')
    return {
      ...none,
      endpointFields: { auth: { type: 'basic', username: 'bench', password: 'bench-pass' } },
    };
  if (mode === 'oauth') {
    const secret = 'bench-client-secret';
    const auth = await startAuthServer(secret);
    return {
      ...none,
      endpointFields: {
        auth: {
          type: 'oauth2_client_credentials',
          token_url: auth.tokenUrl,
          client_id: 'hookpost-bench',
          client_secret: secret,
          scope: 'webhooks',
        },
      },
      close: auth.close,
    };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookpost-bench-partner-'));
  const removeDir = async () => rmSync(dir, { recursive: true, force: true });
  if (mode === 'proxy') {
    const proxy = await startTinyproxy(dir);
    return {
      ...none,
      dispatcherEnv: { HOOKPOST_EGRESS_PROXY: proxy.url },
      parts: [{ name: 'tinyproxy', system: false, cpuSeconds: () => processCpuSeconds(proxy.child.pid!) }],
      async close() {
        if (proxy.child.exitCode === null) {
          const exited = once(proxy.child, 'exit');
          proxy.child.kill('SIGTERM');
          await exited;
        }
        await removeDir();
      },
    };
  }
  const certs = makeCertificates(dir);
  const tls =
    mode === 'mtls'
      ? { ca_certificates: certs.ca, client_certificate: certs.client.cert, client_key: certs.client.key }
      : { ca_certificates: certs.ca };
  return {
    ...none,
    endpointFields: { tls },
    receiverTls: { ...certs.server, ...(mode === 'mtls' ? { ca: certs.ca } : {}) },
    close: removeDir,
  };
}
