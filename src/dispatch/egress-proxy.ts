/**
 * Egress through one HTTP CONNECT proxy (HOOKPOST_EGRESS_PROXY), so partners can allow-list the
 * proxy's addresses. The proxy is handed an IP address, never a name: the partner's name is
 * resolved here by the dispatcher's DNS cache, every address vetted against private ranges
 * (dispatch/dns.ts), and the tunnel opened to the vetted address. Left to the proxy, the name
 * would be resolved where hookpost's check cannot see it, and a partner's DNS answering
 * 10.0.0.5 — or changing its answer between our check and the proxy's lookup — would reach the
 * proxy's LAN. TLS then runs inside the tunnel with the hostname as SNI and in `Host`, so the
 * partner's certificate is checked for its name as without a proxy.
 *
 * A proxy that cannot be reached, times out or refuses the tunnel (407, 403, …) raises
 * ProxyUnavailableError (`proxy_unavailable`): the attempt says nothing about the partner. A 5xx
 * answer to CONNECT means the proxy could not reach the partner: that is the partner's failure.
 */
import net from 'node:net';
import { buildConnector } from 'undici';
import type { DnsCache } from './dns.js';

export interface ProxyConfig {
  host: string;
  port: number;
  /** `Proxy-Authorization: Basic …` when the URL carried user:pass. */
  authorization: string | undefined;
}

/** The error class of an attempt the proxy could not carry. */
export const PROXY_UNAVAILABLE = 'proxy_unavailable';

export class ProxyUnavailableError extends Error {
  code = 'ERR_EGRESS_PROXY_UNAVAILABLE';
}

/** The proxy could not reach the partner (CONNECT answered 5xx): a failure of the partner. */
export class ProxyTargetError extends Error {
  code = 'ECONNREFUSED';
  override name = 'ProxyTargetError';
}

/** Parses `http://[user:pass@]host:port`; throws a message for the config error otherwise. */
export function parseProxyUrl(raw: string): ProxyConfig {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('must be a URL like http://proxy.internal:3128');
  }
  if (url.protocol !== 'http:')
    throw new Error('must be an http:// URL (the CONNECT proxy itself is spoken to in plain HTTP)');
  if (url.pathname !== '/' || url.search || url.hash) throw new Error('must have no path, query or fragment');
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || 80),
    authorization: user || pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` : undefined,
  };
}

const MAX_RESPONSE_HEAD = 8 * 1024;

/** Opens a CONNECT tunnel to `address:port` through the proxy; resolves with the raw socket. */
function openTunnel(
  proxy: ProxyConfig,
  address: string,
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: proxy.host, port: proxy.port });
    let head = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new ProxyUnavailableError('proxy did not answer in time')),
      timeoutMs,
    );
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      fail(new ProxyUnavailableError(`proxy unreachable (${error.code ?? 'error'})`));
    });
    socket.once('connect', () => {
      const target = net.isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`;
      const auth = proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : '';
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}\r\n`);
    });
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_RESPONSE_HEAD)
          fail(new ProxyUnavailableError('proxy sent an oversized answer'));
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      socket.removeAllListeners('error');
      const status = Number(
        /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'))?.[1] ?? 0,
      );
      if (status >= 200 && status < 300) {
        const rest = head.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        return resolve(socket);
      }
      if (status >= 500)
        return fail(new ProxyTargetError(`the proxy could not reach the host (HTTP ${status})`));
      fail(
        new ProxyUnavailableError(
          status ? `proxy refused the tunnel (HTTP ${status})` : 'proxy spoke no HTTP',
        ),
      );
    };
    socket.on('data', onData);
    socket.once('end', () => fail(new ProxyUnavailableError('proxy closed the connection')));
  });
}

export interface ProxyConnectorOptions {
  proxy: ProxyConfig;
  dns: DnsCache;
  timeoutMs: number;
  /** TLS options for https targets (private CA, client certificate). */
  tls: { ca?: string | undefined; cert?: string | undefined; key?: string | undefined };
}

/**
 * An undici `connect` function that reaches every origin through the proxy: resolve and vet the
 * name, CONNECT to the vetted address, then (https) TLS inside the tunnel with the name as SNI.
 */
export function proxyConnector(options: ProxyConnectorOptions): buildConnector.connector {
  const tlsConnect = buildConnector({ timeout: options.timeoutMs, ...options.tls });
  return (opts, callback) => {
    const https = opts.protocol === 'https:';
    const port = Number(opts.port) || (https ? 443 : 80);
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    const addresses = net.isIP(host)
      ? Promise.resolve(host)
      : options.dns.resolve(host).then((all) => all[0]!.address);
    addresses
      .then((address) => openTunnel(options.proxy, address, port, options.timeoutMs))
      .then(
        (socket) => {
          if (!https) return callback(null, socket);
          // The name, not the address, is what the certificate is checked against.
          tlsConnect(
            {
              ...opts,
              servername: opts.servername || (net.isIP(host) ? undefined : host),
              httpSocket: socket,
            } as never,
            callback,
          );
        },
        (error: Error) => callback(error, null),
      );
  };
}
