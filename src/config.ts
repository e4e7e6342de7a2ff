/**
 * Configuration: every setting of a hookpost process is read from the environment here, once at
 * start (main.ts calls loadConfig and passes the typed result down). The only other reads of
 * process.env: the bench's profiling hook HOOKPOST_BENCH_NODE_ARGS (bench/harness.ts), the
 * environment handed on whole to child processes (embedded PostgreSQL, the bench's processes),
 * and, once tracing() here has turned tracing on, the OpenTelemetry SDK's own reads of its
 * standard OTEL_* variables (sampler, batch processor, exporter: tracing/otel.ts).
 * A bad value throws a ConfigError naming the variable, so the process stops before it serves
 * anything.
 */

import dns from 'node:dns';
import path from 'node:path';
import { retention, tracing } from './config-sections.js';
import { type TenantLimits, tenantLimits } from './config-tenant-limits.js';
import {
  boolVar,
  ConfigError,
  type Env,
  fail,
  hostVar,
  numberVar,
  portVar,
  stringVar,
} from './config-vars.js';
import { parseDatabaseUrl } from './db/url.js';
import { DEFAULT_PATTERN_THRESHOLDS, type PatternThresholds } from './deliveries/dead-letter-patterns.js';
import type { RetryPolicy } from './deliveries/retry-policy.js';
import { type ProxyConfig, parseProxyUrl } from './dispatch/egress-proxy.js';
import type { BreakerPolicy } from './endpoints/breaker.js';
import type { TracingConfig } from './tracing/tracing.js';

export { ConfigError } from './config-vars.js';

export interface Config {
  databaseUrl: string | undefined;
  dataDir: string;
  port: number;
  host: string;
  adminToken: string | undefined;
  allowPrivateTargets: boolean;
  secretKey: string | undefined;
  /** Older keys still accepted for decrypting (HOOKPOST_SECRET_KEY_PREVIOUS), so the key can be rotated. */
  secretKeyPrevious: string[];
  production: boolean;
  dispatchConcurrency: number;
  maxPayloadBytes: number;
  maxBatchBytes: number;
  logLevel: string;
  retryBaseSeconds: number;
  retryCapSeconds: number;
  maxAttempts: number;
  /** `delivery.dead_lettered` operational events per source endpoint a minute (the rest: one summary). */
  opsEventsPerMinute: number;
  retryAfterMaxSeconds: number;
  requestTimeoutMs: number;
  /**
   * The longest one statement of the API's pool may run (PostgreSQL statement_timeout): a request
   * whose query takes longer is cancelled and answered 503 `database_busy`.
   */
  apiStatementTimeoutMs: number;
  responseSnippetBytes: number;
  leaseSeconds: number;
  claimBatchSize: number;
  pollIntervalMs: number;
  breakerThreshold: number;
  breakerCooldownSeconds: number;
  breakerMaxCooldownSeconds: number;
  disableAfterSeconds: number;
  backlogLimit: number;
  secretGraceSeconds: number;
  shutdownTimeoutMs: number;
  embeddedPort: number;
  /** Deliveries a bulk replay requeues per transaction. */
  replayBatchSize: number;
  /** The most deliveries per second a bulk replay releases to the dispatchers. */
  replayRatePerSecond: number;
  /** Endpoints per tenant, and its bulk replays and resends at once (config-tenant-limits.ts). */
  tenantLimits: TenantLimits;
  /** A separate /metrics listener (the only way to scrape a `hookpost dispatcher` process). */
  metricsPort: number | undefined;
  /** When set, /metrics asks for `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** How long the database-derived gauges are reused between scrapes. */
  metricsCacheSeconds: number;
  /** When the dead-letter analysis calls a pattern an outage, auth failure, drip (seed 004). */
  deadLetterPatterns: PatternThresholds;
  /** DNS servers for partner names; undefined: those of /etc/resolv.conf (dispatch/dns.ts). */
  dnsServers: string[] | undefined;
  /** HOOKPOST_EGRESS_PROXY: the CONNECT proxy every delivery and token request leaves through. */
  egressProxy: ProxyConfig | undefined;
  /** Longest a DNS answer is cached, whatever its TTL. */
  dnsMaxTtlSeconds: number;
  /** Origins allowed to frame /portal (CSP frame-ancestors); empty: none may. */
  portalFrameAncestors: string[];
  /** Retention (src/retention/): settled deliveries and messages older than this are removed. */
  retentionDays: number;
  /** Payload bytes and response snippets are erased after this; metadata kept until retentionDays. */
  payloadRetentionDays: number;
  /** Width of one delivery_attempts partition (aligned to the Unix epoch, so daily = UTC days). */
  partitionIntervalSeconds: number;
  /** Partitions kept created ahead of the current one. */
  partitionsAhead: number;
  /** How often a dispatcher runs the retention pass (one at a time across processes). */
  retentionIntervalSeconds: number;
  /** Rows per retention statement (one short transaction each). */
  retentionBatchSize: number;
  /** Pause between two retention batches, so the pass never hogs the database. */
  retentionPauseMs: number;
  /** OpenTelemetry traces (docs/tracing.md); undefined: off, and the SDK is never loaded. */
  tracing: TracingConfig | undefined;
  /** The retry and breaker policies, built once from the variables above and passed down. */
  policies: { retry: RetryPolicy; breaker: BreakerPolicy };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function patternThresholds(env: Env): PatternThresholds {
  const d = DEFAULT_PATTERN_THRESHOLDS;
  const share = numberVar(env, 'HOOKPOST_DLQ_DOMINANT_SHARE', d.dominantShare);
  if (share <= 0 || share > 1)
    fail('HOOKPOST_DLQ_DOMINANT_SHARE', String(share), 'a number above 0, at most 1');
  return {
    clusterCount: numberVar(env, 'HOOKPOST_DLQ_CLUSTER_COUNT', d.clusterCount, { min: 1, integer: true }),
    clusterWindowSeconds: numberVar(env, 'HOOKPOST_DLQ_CLUSTER_WINDOW_SECONDS', d.clusterWindowSeconds, {
      min: 1,
    }),
    dominantShare: share,
    dripMaxPerDay: numberVar(env, 'HOOKPOST_DLQ_DRIP_MAX_PER_DAY', d.dripMaxPerDay, { min: 1 }),
    dripMinSpanSeconds: numberVar(env, 'HOOKPOST_DLQ_DRIP_MIN_SPAN_SECONDS', d.dripMinSpanSeconds),
    dripMaxPerClusterWindow: numberVar(env, 'HOOKPOST_DLQ_DRIP_MAX_PER_WINDOW', d.dripMaxPerClusterWindow, {
      min: 1,
      integer: true,
    }),
  };
}

/** HOOKPOST_EGRESS_PROXY: `http://[user:pass@]host:port`; the error never repeats the value (it may hold a password). */
function egressProxy(env: Env): ProxyConfig | undefined {
  const raw = stringVar(env, 'HOOKPOST_EGRESS_PROXY');
  if (raw === undefined) return undefined;
  try {
    return parseProxyUrl(raw);
  } catch (error) {
    throw new ConfigError(`HOOKPOST_EGRESS_PROXY is invalid: ${(error as Error).message}`);
  }
}

/** HOOKPOST_DNS_SERVERS: comma-separated `ip`, `ip:port` or `[ipv6]:port`, checked by c-ares itself. */
function dnsServers(env: Env): string[] | undefined {
  const raw = stringVar(env, 'HOOKPOST_DNS_SERVERS');
  if (raw === undefined) return undefined;
  const servers = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  try {
    new dns.Resolver().setServers(servers);
  } catch {
    fail(
      'HOOKPOST_DNS_SERVERS',
      raw,
      'comma-separated IP addresses, optionally with :port (1.1.1.1,[::1]:53)',
    );
  }
  return servers;
}

/**
 * HOOKPOST_PORTAL_FRAME_ANCESTORS: origins (scheme://host[:port], host may start with `*.`) or
 * 'self', separated by commas or spaces. Each is checked strictly because it goes into a
 * Content-Security-Policy header: a `;` or a quote would let the variable add other directives.
 */
function portalFrameAncestors(env: Env): string[] {
  const name = 'HOOKPOST_PORTAL_FRAME_ANCESTORS';
  const raw = stringVar(env, name);
  if (raw === undefined) return [];
  const origins = raw.split(/[\s,]+/).filter((s) => s !== '');
  for (const origin of origins) {
    if (origin === "'self'") continue;
    if (!/^https?:\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?$/.test(origin)) {
      fail(name, raw, "origins such as https://app.example.com (or 'self'), separated by commas");
    }
  }
  return [...new Set(origins)];
}

/** HOOKPOST_SECRET_KEY_PREVIOUS: comma-separated older keys, only meaningful beside a current key. */
function previousSecretKeys(env: Env, current: string | undefined): string[] {
  const raw = stringVar(env, 'HOOKPOST_SECRET_KEY_PREVIOUS');
  if (raw === undefined) return [];
  if (current === undefined) {
    throw new ConfigError(
      'HOOKPOST_SECRET_KEY_PREVIOUS is set but HOOKPOST_SECRET_KEY is not: set the new key too',
    );
  }
  const keys = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  // Never echo the value: these are keys.
  if (keys.some((k) => k.length < 16)) {
    throw new ConfigError(
      'HOOKPOST_SECRET_KEY_PREVIOUS is invalid: expected keys of at least 16 characters, comma-separated',
    );
  }
  return keys;
}

/** Parses and validates the whole configuration; throws ConfigError on the first bad value. */
export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const databaseUrl = stringVar(env, 'DATABASE_URL');
  // The value may hold a password: never echo it.
  if (databaseUrl !== undefined && parseDatabaseUrl(databaseUrl) === undefined) {
    fail(
      'DATABASE_URL',
      '<redacted>',
      'a postgres://user:password@host:port/database URL (several hosts: host1:port1,host2:port2)',
    );
  }
  const secretKey = stringVar(env, 'HOOKPOST_SECRET_KEY');
  if (production && secretKey === undefined) {
    throw new ConfigError('HOOKPOST_SECRET_KEY is required when NODE_ENV=production');
  }
  if (secretKey !== undefined && secretKey.length < 16) {
    throw new ConfigError('HOOKPOST_SECRET_KEY is invalid: expected at least 16 characters');
  }
  const secretKeyPrevious = previousSecretKeys(env, secretKey);
  const adminToken = stringVar(env, 'HOOKPOST_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('HOOKPOST_ADMIN_TOKEN is invalid: expected at least 16 characters');
  }
  const metricsToken = stringVar(env, 'HOOKPOST_METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 16) {
    throw new ConfigError('HOOKPOST_METRICS_TOKEN is invalid: expected at least 16 characters');
  }
  const rawMetricsPort = stringVar(env, 'HOOKPOST_METRICS_PORT');
  const metricsPort = rawMetricsPort === undefined ? undefined : portVar(env, 'HOOKPOST_METRICS_PORT', 0);
  const logLevel = (stringVar(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) fail('LOG_LEVEL', logLevel, LOG_LEVELS.join(', '));

  const config: Config = {
    databaseUrl,
    dataDir: path.resolve(stringVar(env, 'HOOKPOST_DATA_DIR') ?? '.hookpost'),
    port: portVar(env, 'PORT', 8080),
    host: hostVar(env, 'HOST', '127.0.0.1'),
    adminToken,
    allowPrivateTargets: boolVar(env, 'HOOKPOST_ALLOW_PRIVATE_TARGETS', false),
    secretKey,
    secretKeyPrevious,
    production,
    dispatchConcurrency: numberVar(env, 'HOOKPOST_DISPATCH_CONCURRENCY', 256, { min: 1, integer: true }),
    maxPayloadBytes: numberVar(env, 'HOOKPOST_MAX_PAYLOAD_BYTES', 262144, { min: 1, integer: true }),
    maxBatchBytes: numberVar(env, 'HOOKPOST_MAX_BATCH_BYTES', 32 * 1024 * 1024, { min: 1024, integer: true }),
    logLevel,
    retryBaseSeconds: numberVar(env, 'HOOKPOST_RETRY_BASE_SECONDS', 30),
    retryCapSeconds: numberVar(env, 'HOOKPOST_RETRY_CAP_SECONDS', 3600),
    maxAttempts: numberVar(env, 'HOOKPOST_MAX_ATTEMPTS', 8, { min: 1, integer: true }),
    opsEventsPerMinute: numberVar(env, 'HOOKPOST_OPS_EVENTS_PER_MINUTE', 600, { min: 1, integer: true }),
    retryAfterMaxSeconds: numberVar(env, 'HOOKPOST_RETRY_AFTER_MAX_SECONDS', 3600),
    requestTimeoutMs: numberVar(env, 'HOOKPOST_REQUEST_TIMEOUT_MS', 15000, { min: 1 }),
    apiStatementTimeoutMs: numberVar(env, 'HOOKPOST_API_STATEMENT_TIMEOUT_MS', 5000, {
      min: 1,
      integer: true,
    }),
    responseSnippetBytes: numberVar(env, 'HOOKPOST_RESPONSE_SNIPPET_BYTES', 1024, { integer: true }),
    leaseSeconds: numberVar(env, 'HOOKPOST_LEASE_SECONDS', 60, { min: 0.01 }),
    claimBatchSize: numberVar(env, 'HOOKPOST_CLAIM_BATCH_SIZE', 500, { min: 1, integer: true }),
    pollIntervalMs: numberVar(env, 'HOOKPOST_POLL_INTERVAL_MS', 1000, { min: 1 }),
    breakerThreshold: numberVar(env, 'HOOKPOST_BREAKER_THRESHOLD', 10, { min: 1, integer: true }),
    breakerCooldownSeconds: numberVar(env, 'HOOKPOST_BREAKER_COOLDOWN_SECONDS', 300),
    breakerMaxCooldownSeconds: numberVar(env, 'HOOKPOST_BREAKER_MAX_COOLDOWN_SECONDS', 3600),
    disableAfterSeconds: numberVar(env, 'HOOKPOST_DISABLE_AFTER_SECONDS', 432000),
    backlogLimit: numberVar(env, 'HOOKPOST_BACKLOG_LIMIT', 1_000_000, { min: 1, integer: true }),
    secretGraceSeconds: numberVar(env, 'HOOKPOST_SECRET_GRACE_SECONDS', 86400),
    shutdownTimeoutMs: numberVar(env, 'HOOKPOST_SHUTDOWN_TIMEOUT_MS', 20000, { min: 0 }),
    embeddedPort: numberVar(env, 'HOOKPOST_EMBEDDED_PG_PORT', 54329, { min: 1, integer: true }),
    replayBatchSize: numberVar(env, 'HOOKPOST_REPLAY_BATCH_SIZE', 100, { min: 1, integer: true }),
    replayRatePerSecond: numberVar(env, 'HOOKPOST_REPLAY_RATE_PER_SECOND', 50),
    tenantLimits: tenantLimits(env),
    metricsPort,
    metricsToken,
    metricsCacheSeconds: numberVar(env, 'HOOKPOST_METRICS_CACHE_SECONDS', 5),
    deadLetterPatterns: patternThresholds(env),
    dnsServers: dnsServers(env),
    egressProxy: egressProxy(env),
    dnsMaxTtlSeconds: numberVar(env, 'HOOKPOST_DNS_MAX_TTL_SECONDS', 300, { min: 0 }),
    portalFrameAncestors: portalFrameAncestors(env),
    ...retention(env),
    tracing: tracing(env),
    policies: undefined as never, // filled in below, from the validated values
  };
  config.policies = {
    retry: {
      baseSeconds: config.retryBaseSeconds,
      capSeconds: config.retryCapSeconds,
      maxAttempts: config.maxAttempts,
      retryAfterMaxSeconds: config.retryAfterMaxSeconds,
    },
    breaker: {
      threshold: config.breakerThreshold,
      cooldownSeconds: config.breakerCooldownSeconds,
      maxCooldownSeconds: config.breakerMaxCooldownSeconds,
      disableAfterSeconds: config.disableAfterSeconds,
    },
  };
  // A batch is one transaction holding its rows locked: keep it small. A rate of 0 would never
  // finish, and one below 1/1000 s is surely a typo for a larger number.
  if (config.replayBatchSize > 10_000) {
    fail('HOOKPOST_REPLAY_BATCH_SIZE', String(env.HOOKPOST_REPLAY_BATCH_SIZE), 'an integer from 1 to 10000');
  }
  if (config.replayRatePerSecond < 0.001) {
    fail('HOOKPOST_REPLAY_RATE_PER_SECOND', String(env.HOOKPOST_REPLAY_RATE_PER_SECOND), 'a number >= 0.001');
  }
  if (config.retryCapSeconds < config.retryBaseSeconds) {
    throw new ConfigError('HOOKPOST_RETRY_CAP_SECONDS must be >= HOOKPOST_RETRY_BASE_SECONDS');
  }
  if (config.breakerMaxCooldownSeconds < config.breakerCooldownSeconds) {
    throw new ConfigError(
      'HOOKPOST_BREAKER_MAX_COOLDOWN_SECONDS must be >= HOOKPOST_BREAKER_COOLDOWN_SECONDS',
    );
  }
  // Partitions are created by the retention pass; they must not run out between two passes.
  if (config.retentionIntervalSeconds >= config.partitionIntervalSeconds * config.partitionsAhead) {
    throw new ConfigError(
      'HOOKPOST_RETENTION_INTERVAL_SECONDS must be shorter than HOOKPOST_PARTITION_INTERVAL_SECONDS × HOOKPOST_PARTITIONS_AHEAD',
    );
  }
  // A claimed delivery can wait up to about one request timeout in the dispatcher's local buffer
  // (one endpoint buffers at most two rounds of its HTTP slots) before its own attempt, which
  // can take another timeout: a shorter lease could run out mid-attempt and the delivery be
  // sent twice. The dispatcher also refuses to start an attempt that its lease cannot cover.
  if (config.leaseSeconds * 1000 <= 2 * config.requestTimeoutMs) {
    throw new ConfigError(
      `HOOKPOST_LEASE_SECONDS (${config.leaseSeconds}) must be longer than twice HOOKPOST_REQUEST_TIMEOUT_MS ` +
        `(${config.requestTimeoutMs} ms): a claimed delivery can wait one timeout in the dispatcher's buffer ` +
        'before its attempt, which can take another',
    );
  }
  return config;
}
