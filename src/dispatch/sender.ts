/**
 * One HTTP attempt with undici: keep-alive pools per origin, one deadline for the whole attempt
 * (connect + headers + body), a capped response read, no redirects, and failures classified
 * by undici's stable `err.code` rather than by message text.
 */

import { Agent, buildConnector } from 'undici';
import { type AttemptOutcome, isRetryableStatus, parseRetryAfter } from '../deliveries/retry-policy.js';
import { isPrivateAddress, isPrivateHost } from '../endpoints/targets.js';
import { TracedReader, timedConnector } from '../tracing/http-timing.js';
import type { AttemptSpan } from '../tracing/tracing.js';
import { DnsCache } from './dns.js';
import { PROXY_UNAVAILABLE, type ProxyConfig, proxyConnector } from './egress-proxy.js';
import type { TlsMaterial } from './partner-credentials.js';
import { ResponseReader } from './response-reader.js';

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The endpoint's private CA and client certificate; undefined: public CAs, no certificate. */
  tls?: TlsMaterial | undefined;
  /** How much of the answer to keep (a token response); default: the attempt log's snippet size. */
  keepBytes?: number | undefined;
  /** The attempt's span (tracing on): told the HTTP exchange's moments (tracing/http-timing.ts). */
  trace?: AttemptSpan | undefined;
}

/**
 * Connection pools kept for distinct TLS configurations (endpoints sharing one share a pool);
 * past this many the least recently created one is closed, to be opened again when needed.
 */
const MAX_TLS_POOLS = 1000;

export interface SendResult {
  outcome: AttemptOutcome;
  durationMs: number;
  /** The first bytes of the response body, for the attempt log. */
  snippet: string | null;
  /** A short, payload-free description of a failure. */
  error: string | null;
}

export interface SenderOptions {
  timeoutMs: number;
  snippetBytes: number;
  allowPrivateTargets: boolean;
  /** Connections per origin; the dispatcher's concurrency bounds the total anyway. */
  connectionsPerOrigin: number;
  userAgent: string;
  /** DNS servers for partner names (HOOKPOST_DNS_SERVERS); unset: the system's. */
  dnsServers?: string[] | undefined;
  /** Longest a DNS answer is cached, whatever its TTL (HOOKPOST_DNS_MAX_TTL_SECONDS). */
  dnsMaxTtlSeconds?: number | undefined;
  /** HOOKPOST_EGRESS_PROXY: every connection goes through this CONNECT proxy. */
  egressProxy?: ProxyConfig | undefined;
  /** Tracing is on: new connections record their DNS, TCP and TLS moments for attempt spans. */
  timed?: boolean | undefined;
}

/** Maps an undici/Node error to a stable, payload-free class. */
export function classifyError(error: unknown, timedOut: boolean, aborted: boolean): AttemptOutcome {
  if (timedOut) return { kind: 'retryable', errorClass: 'timeout' };
  if (aborted) return { kind: 'shutdown', errorClass: 'shutdown' };
  const code = (error as { code?: string }).code ?? '';
  const cause = ((error as { cause?: { code?: string } }).cause?.code as string | undefined) ?? '';
  const c = code || cause;
  if (c === 'HOOKPOST_PRIVATE_TARGET' || cause === 'HOOKPOST_PRIVATE_TARGET') {
    return { kind: 'permanent', errorClass: 'private_address_blocked' };
  }
  if (c === 'ERR_EGRESS_PROXY_UNAVAILABLE') return { kind: 'retryable', errorClass: PROXY_UNAVAILABLE };
  // undici refused the request itself (a header value stored before the API checked them):
  // every retry would fail the same way, so it is the endpoint's permanent problem.
  if (c === 'UND_ERR_INVALID_ARG') return { kind: 'permanent', errorClass: 'invalid_request' };
  const classes: Record<string, string> = {
    UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
    UND_ERR_HEADERS_TIMEOUT: 'timeout',
    UND_ERR_BODY_TIMEOUT: 'timeout',
    UND_ERR_SOCKET: 'connection_reset',
    UND_ERR_CLOSED: 'connection_reset',
    ECONNRESET: 'connection_reset',
    EPIPE: 'connection_reset',
    ECONNREFUSED: 'connection_refused',
    EHOSTUNREACH: 'host_unreachable',
    ENETUNREACH: 'host_unreachable',
    ENOTFOUND: 'dns_error',
    EAI_AGAIN: 'dns_error',
    // c-ares codes (dispatch/dns.ts): no answer within the deadline, a failing or refusing server.
    ETIMEOUT: 'dns_error',
    ESERVFAIL: 'dns_error',
    ENODATA: 'dns_error',
    EREFUSED: 'dns_error',
    ETIMEDOUT: 'connect_timeout',
    UND_ERR_INFO: 'protocol_error',
    HPE_INVALID_CONSTANT: 'protocol_error',
  };
  if (classes[c]) return { kind: 'retryable', errorClass: classes[c]! };
  if (
    c.startsWith('ERR_TLS') ||
    c.includes('CERT') ||
    c.startsWith('ERR_SSL') ||
    c === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    c === 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'
  ) {
    return { kind: 'retryable', errorClass: 'tls_error' };
  }
  if (c.startsWith('HPE_')) return { kind: 'retryable', errorClass: 'protocol_error' };
  return { kind: 'retryable', errorClass: 'network_error' };
}

function outcomeForStatus(status: number, retryAfter: string | undefined): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: 'success', statusCode: status };
  if (isRetryableStatus(status)) {
    const seconds = parseRetryAfter(retryAfter, Date.now());
    return seconds === undefined
      ? { kind: 'retryable', statusCode: status, errorClass: `http_${status}` }
      : { kind: 'retryable', statusCode: status, errorClass: `http_${status}`, retryAfterSeconds: seconds };
  }
  if (status >= 300 && status < 400)
    return { kind: 'permanent', statusCode: status, errorClass: 'redirect_not_followed' };
  if (status === 410) return { kind: 'permanent', statusCode: status, errorClass: 'gone' };
  return { kind: 'permanent', statusCode: status, errorClass: `http_${status}` };
}

interface Target {
  origin: string;
  path: string;
  privateHost: boolean;
}

/**
 * The request's headers plus user-agent as undici's flat [name, value, …] list: it walks an
 * object's keys into the same list anyway, and this spares a copy of the object per attempt.
 */
function withUserAgent(headers: Record<string, string>, userAgent: string): string[] {
  const list: string[] = [];
  for (const name in headers) if (name !== 'user-agent') list.push(name, headers[name]!);
  list.push('user-agent', userAgent);
  return list;
}

/** Parsed endpoint URLs, cached: a URL parse per request is measurable at 10,000 requests/s. */
const targets = new Map<string, Target>();

function parseTarget(raw: string): Target {
  let target = targets.get(raw);
  if (!target) {
    const url = new URL(raw);
    target = {
      origin: url.origin,
      path: url.pathname + url.search,
      privateHost: isPrivateHost(url.hostname),
    };
    if (targets.size > 10_000) targets.clear();
    targets.set(raw, target);
  }
  return target;
}

/**
 * The attempt's error text: the class, and for a TLS failure the handshake's own code
 * (`CERT_HAS_EXPIRED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, a certificate-required alert), which
 * tells an operator a wrong CA from a missing client certificate. Codes carry no payload.
 */
function errorText(errorClass: string, error: unknown): string {
  // The proxy's own words: a status or a socket code, never a header of the request.
  if (errorClass === PROXY_UNAVAILABLE || (error as { name?: string }).name === 'ProxyTargetError') {
    return `${errorClass}: ${(error as Error).message}`;
  }
  if (errorClass !== 'tls_error') return errorClass;
  const e = error as { code?: string; cause?: { code?: string } };
  const code = e.cause?.code ?? e.code;
  return code ? `tls_error: ${code}` : errorClass;
}

export class Sender {
  private readonly agent: Agent;
  /** One pool per distinct TLS configuration, by TlsMaterial.key: connections are reused. */
  private readonly tlsAgents = new Map<string, Agent>();
  private readonly dns: DnsCache;
  private readonly inFlight = new Set<ResponseReader>();
  private aborting = false;

  constructor(private readonly options: SenderOptions) {
    // Every connection's name goes through the cache; with private targets refused, each answer
    // (cached or fresh, every address of it) is checked before undici may connect to it.
    this.dns = new DnsCache({
      servers: options.dnsServers,
      timeoutMs: options.timeoutMs,
      maxTtlSeconds: options.dnsMaxTtlSeconds ?? 300,
      isBlocked: options.allowPrivateTargets ? undefined : isPrivateAddress,
    });
    this.agent = this.createAgent(undefined);
  }

  /**
   * A keep-alive pool. With TLS material its connections trust only the endpoint's CA (when one
   * is given) and present its client certificate.
   */
  private createAgent(tls: TlsMaterial | undefined): Agent {
    const proxy = this.options.egressProxy;
    const tlsOptions = {
      ...(tls?.ca && { ca: tls.ca }),
      ...(tls?.cert && { cert: tls.cert, key: tls.privateKey }),
    };
    const connect = proxy
      ? proxyConnector({ proxy, dns: this.dns, timeoutMs: this.options.timeoutMs, tls: tlsOptions })
      : { timeout: this.options.timeoutMs, lookup: this.dns.lookup as never, ...tlsOptions };
    return new Agent({
      connections: this.options.connectionsPerOrigin,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: this.options.timeoutMs,
      bodyTimeout: this.options.timeoutMs,
      // The same connector undici would build from the options, wrapped to time it when traced.
      connect: !this.options.timed
        ? connect
        : timedConnector(typeof connect === 'function' ? connect : buildConnector(connect)),
    });
  }

  /** The pool for an attempt: the shared one, or the one of the endpoint's TLS configuration. */
  private agentFor(tls: TlsMaterial | undefined): Agent {
    if (!tls) return this.agent;
    let agent = this.tlsAgents.get(tls.key);
    if (!agent) {
      if (this.tlsAgents.size >= MAX_TLS_POOLS) {
        const [oldestKey, oldest] = this.tlsAgents.entries().next().value!;
        this.tlsAgents.delete(oldestKey);
        void oldest.close();
      }
      agent = this.createAgent(tls);
      this.tlsAgents.set(tls.key, agent);
    }
    return agent;
  }

  /**
   * Sends one attempt. Never throws: every failure becomes an outcome. abortAll() ends every
   * attempt in progress (shutdown); attempts are tracked in a Set rather than as listeners on a
   * shared AbortSignal, whose add/remove cost grows with the number of attempts in flight.
   */
  async send(request: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const keep = request.keepBytes ?? this.options.snippetBytes;
    const reader = request.trace ? this.tracedReader(keep, request) : new ResponseReader(keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reader.abort(new Error('attempt deadline'));
    }, this.options.timeoutMs);
    this.inFlight.add(reader);
    try {
      const target = parseTarget(request.url);
      if (!this.options.allowPrivateTargets && target.privateHost) {
        const blocked = { kind: 'permanent', errorClass: 'private_address_blocked' } as const;
        return this.result(started, blocked, null, 'private address');
      }
      this.agentFor(request.tls).dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: withUserAgent(request.headers, this.options.userAgent),
          body: request.body,
        },
        reader,
      );
      const response = await reader.done;
      const outcome = outcomeForStatus(response.statusCode, response.retryAfter);
      const error = outcome.kind === 'success' ? null : `HTTP ${response.statusCode}`;
      return this.result(started, outcome, response.snippet, error);
    } catch (error) {
      const outcome = classifyError(error, timedOut, this.aborting);
      const errorClass = outcome.kind === 'success' ? '' : outcome.errorClass;
      return this.result(started, outcome, null, errorText(errorClass, error));
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(reader);
    }
  }

  private tracedReader(keep: number, request: SendRequest): TracedReader {
    let path = '';
    try {
      path = parseTarget(request.url).path;
    } catch {
      // send() reports the bad URL itself
    }
    return new TracedReader(keep, request.trace!, path);
  }

  /** Aborts every attempt in progress; each ends with the retryable class `shutdown`. */
  abortAll(): void {
    this.aborting = true;
    for (const reader of this.inFlight) reader.abort(new Error('shutdown'));
  }

  private result(
    started: number,
    outcome: AttemptOutcome,
    snippet: string | null,
    error: string | null,
  ): SendResult {
    return { outcome, durationMs: Math.round(performance.now() - started), snippet, error };
  }

  async close(): Promise<void> {
    await Promise.all([this.agent.close(), ...[...this.tlsAgents.values()].map((a) => a.close())]);
  }
}
