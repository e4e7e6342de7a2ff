/**
 * One claimed delivery from the local buffer to a stored result: re-read its endpoint if a
 * change was announced meanwhile, hand it back uncharged when it can no longer be sent (endpoint
 * disabled or deleted, lease too short), else sign and send it, decide what comes next (retry
 * policy) and hand the result to the completion writer. No database transaction is open here:
 * the claim committed before, and the result is written in a batch after.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { backoffMs, nextAttempt, policyFor, type RetryPolicy } from '../deliveries/retry-policy.js';
import { errorFields, type Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import type { ClaimedDelivery } from '../queue/claim.js';
import { releaseClaims } from '../queue/hand-back.js';
import { type AttemptSpan, type Tracing, traceFields } from '../tracing/tracing.js';
import { attemptHeaders, attemptRecord } from './attempt.js';
import type { CompletionWriter } from './completions.js';
import { PROXY_UNAVAILABLE } from './egress-proxy.js';
import { type DispatchEndpoint, type EndpointCache, SECRET_UNAVAILABLE } from './endpoint-cache.js';
import { leaseCoversAttempt } from './lease.js';
import { AUTH_FAILED, type TokenCache } from './oauth-tokens.js';
import type { OAuthClient } from './partner-credentials.js';
import type { Sender, SendRequest, SendResult } from './sender.js';

/** A claimed delivery waiting in the local buffer. */
export interface Job {
  job: ClaimedDelivery;
  endpoint: DispatchEndpoint | undefined;
  /** Local clock (ms) by which the lease surely ends: claim start + lease. */
  leaseEndsAt: number;
}

export interface AttemptRunnerDeps {
  sql: Sql;
  config: Config;
  log: Logger;
  sender: Sender;
  endpoints: EndpointCache;
  completions: CompletionWriter;
  policy: RetryPolicy;
  /** OAuth2 client-credentials tokens, for endpoints with that `auth`. */
  tokens: TokenCache;
  metrics?: HookpostMetrics | undefined;
  /** OpenTelemetry traces; undefined when off (one check per attempt, nothing else). */
  tracing?: Tracing | undefined;
}

/** The attempt could not be sent within its lease (it waited for a token): hand it back uncharged. */
const HAND_BACK = Symbol('hand back');

function proxyFailed(error: string): SendResult {
  return {
    outcome: { kind: 'retryable', errorClass: PROXY_UNAVAILABLE },
    durationMs: 0,
    snippet: null,
    error,
  };
}

function authFailed(reason: string, started: number): SendResult {
  return {
    outcome: { kind: 'retryable', errorClass: AUTH_FAILED },
    durationMs: Math.round(performance.now() - started),
    snippet: null,
    error: `${AUTH_FAILED}: ${reason}`,
  };
}

export class AttemptRunner {
  /** Consecutive attempts the egress proxy could not carry: the hand-back's backoff grows with it. */
  private proxyFailures = 0;
  /** A line per attempt at debug level; checked once, not per attempt. */
  private readonly debug: boolean;

  constructor(private readonly deps: AttemptRunnerDeps) {
    this.debug = deps.log.isLevelEnabled('debug');
  }

  async run({ job, endpoint: claimedWith, leaseEndsAt }: Job): Promise<void> {
    const { config, endpoints } = this.deps;
    // A change announced while the job waited in the local buffer (rotation, disable) applies.
    let endpoint = claimedWith && endpoints.freshOrReload(job.endpointId);
    if (endpoint instanceof Promise) endpoint = await endpoint.catch(() => claimedWith);
    // Out of lease (it waited too long in the buffer): sending now could outlive the lease.
    const tooLate = !leaseCoversAttempt(
      Date.now(),
      leaseEndsAt,
      config.requestTimeoutMs,
      config.leaseSeconds,
    );
    if (!endpoint?.enabled || tooLate) {
      // Disabled (or deleted) between claim and send, or out of lease: hand it back uncharged;
      // the queue's rule (src/queue/states.ts) parks or cancels it.
      await this.handBack(job);
      return;
    }
    const startedAt = new Date();
    const headers = attemptHeaders(endpoint, job, Math.floor(startedAt.getTime() / 1000));
    // An endpoint whose secrets cannot be decrypted fails alone, as a retryable attempt that
    // sends nothing: not charged (retry-policy.ts isCharged), its deliveries back off and its
    // breaker parks them until the key is back.
    const span = this.deps.tracing ? this.startSpan(job, endpoint, headers) : undefined;
    const request = {
      url: endpoint.url,
      headers,
      body: job.payload,
      tls: endpoint.credentials?.tls,
      // An attempt its sampler dropped is timed by nobody: the HTTP moments are for spans exported.
      trace: span?.recording ? span : undefined,
    };
    const oauth = endpoint.credentials?.oauth;
    const sent: SendResult | typeof HAND_BACK = endpoint.unavailable
      ? {
          outcome: { kind: 'retryable', errorClass: SECRET_UNAVAILABLE, notSent: true },
          durationMs: 0,
          snippet: null,
          error: endpoint.unavailable,
        }
      : oauth
        ? await this.sendWithToken(endpoint.id, oauth, request, leaseEndsAt)
        : await this.deps.sender.send(request);
    if (sent === HAND_BACK) {
      span?.end({ statusCode: undefined, errorClass: 'handed_back' });
      await this.handBack(job, 0, span);
      return;
    }
    if (span || this.debug) this.finished(job, sent, span);
    if (sent.outcome.kind !== 'success' && sent.outcome.errorClass === PROXY_UNAVAILABLE) {
      // The proxy failed, not the partner: no attempt is charged or logged, the breaker is not
      // told, and the delivery is claimed again after a backoff that grows while the proxy is down.
      this.deps.metrics?.proxyUnavailable.inc();
      this.proxyFailures++;
      if (this.proxyFailures === 1 || this.proxyFailures % 100 === 0) {
        this.deps.log.warn({ failures: this.proxyFailures, error: sent.error }, 'egress proxy unavailable');
      }
      // The global retry backoff (full jitter), by this process's consecutive proxy failures.
      await this.handBack(
        job,
        backoffMs(Math.min(this.proxyFailures, 30), this.deps.policy, Math.random),
        span,
      );
      return;
    }
    if (this.proxyFailures > 0) this.proxyFailures = 0;
    const result = sent;
    // The endpoint's own max_attempts / backoff override the global policy (sql/0007).
    const decision = nextAttempt(
      job.attempt,
      result.outcome,
      policyFor(this.deps.policy, endpoint.retry),
      Math.random,
    );
    this.deps.completions.add(attemptRecord(job, endpoint, startedAt, result, decision), leaseEndsAt);
  }

  /**
   * Sends with `Authorization: Bearer` from the token cache. A refused token (`401`) is renewed
   * once and the request sent again within the same attempt; a token that cannot be had is
   * `auth_failed` with the token endpoint's reason, retried like any transient failure.
   */
  private async sendWithToken(
    endpointId: string,
    client: OAuthClient,
    request: SendRequest,
    leaseEndsAt: number,
  ): Promise<SendResult | typeof HAND_BACK> {
    const { config, tokens, sender } = this.deps;
    const started = performance.now();
    const covered = () =>
      leaseCoversAttempt(Date.now(), leaseEndsAt, config.requestTimeoutMs, config.leaseSeconds);
    const first = tokens.token(endpointId, client);
    const got = first instanceof Promise ? await first : first;
    if (got.error !== undefined)
      return got.proxyUnavailable ? proxyFailed(got.error) : authFailed(got.error, started);
    // Waiting for the token may have eaten into the lease: send only if the attempt still fits.
    if (first instanceof Promise && !covered()) return HAND_BACK;
    request.headers.authorization = `Bearer ${got.token}`;
    const result = await sender.send(request);
    if (result.outcome.statusCode !== 401 || !covered()) return result;
    const renewed = await tokens.renew(endpointId, client, got.token);
    if (renewed.error !== undefined) {
      return renewed.proxyUnavailable ? proxyFailed(renewed.error) : authFailed(renewed.error, started);
    }
    if (!covered()) return result;
    request.headers.authorization = `Bearer ${renewed.token}`;
    return sender.send(request);
  }

  /**
   * The attempt's span, in the trace its parent names: a replay's (kept on the queue row, linked
   * to the message's own trace) or the message's; a new trace when neither was stored. An
   * endpoint with propagate_trace gets the span's traceparent.
   */
  private startSpan(job: ClaimedDelivery, endpoint: DispatchEndpoint, headers: Record<string, string>) {
    const replay = job.replayTraceparent;
    const span = this.deps.tracing!.attemptSpan({
      deliveryId: job.id,
      endpointId: job.endpointId,
      tenantId: endpoint.tenantId,
      attempt: job.attempt,
      url: endpoint.url,
      parent: replay ?? job.traceparent,
      link: replay === null ? null : job.traceparent,
    });
    if (endpoint.propagateTrace) headers.traceparent = span.traceparent;
    return span;
  }

  /** Ends the attempt's span with its result, and logs the attempt at debug level. */
  private finished(job: ClaimedDelivery, sent: SendResult, span: AttemptSpan | undefined): void {
    const { outcome } = sent;
    const errorClass = outcome.kind === 'success' ? null : outcome.errorClass;
    span?.end({ statusCode: outcome.statusCode, errorClass });
    if (!this.debug) return;
    this.deps.log.debug(
      {
        deliveryId: job.id,
        endpointId: job.endpointId,
        attempt: job.attempt,
        statusCode: outcome.statusCode ?? null,
        errorClass,
        durationMs: sent.durationMs,
        ...traceFields(span),
      },
      'attempt finished',
    );
  }

  private async handBack(job: ClaimedDelivery, delayMs = 0, span?: AttemptSpan): Promise<void> {
    await releaseClaims(this.deps.sql, [job], delayMs).catch((error: unknown) =>
      this.deps.log.warn(
        { ...errorFields(error), deliveryId: job.id, ...traceFields(span) },
        'handing back a claim failed; its lease will run out',
      ),
    );
  }
}
