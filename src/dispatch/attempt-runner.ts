/**
 * One claimed delivery from the local buffer to a stored result: re-read its endpoint if a
 * change was announced meanwhile, hand it back uncharged when it can no longer be sent (endpoint
 * disabled or deleted, lease too short), else sign and send it, decide what comes next (retry
 * policy) and hand the result to the completion writer. No database transaction is open here:
 * the claim committed before, and the result is written in a batch after.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import type { ClaimedDelivery } from '../deliveries/claim.js';
import { releaseClaims } from '../deliveries/queue.js';
import { nextAttempt, policyFor, type RetryPolicy } from '../deliveries/retry-policy.js';
import { errorFields, type Logger } from '../log.js';
import { attemptHeaders, attemptRecord } from './attempt.js';
import type { CompletionWriter } from './completions.js';
import { type DispatchEndpoint, type EndpointCache, SECRET_UNAVAILABLE } from './endpoint-cache.js';
import { leaseCoversAttempt } from './lease.js';
import type { Sender, SendResult } from './sender.js';

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
}

export class AttemptRunner {
  constructor(private readonly deps: AttemptRunnerDeps) {}

  async run({ job, endpoint: claimedWith, leaseEndsAt }: Job): Promise<void> {
    const { config, log, endpoints } = this.deps;
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
      // the queue-state rule parks or cancels it.
      await releaseClaims(this.deps.sql, [job]).catch((error: unknown) =>
        log.warn(
          { ...errorFields(error), deliveryId: job.id },
          'handing back a claim failed; its lease will run out',
        ),
      );
      return;
    }
    const startedAt = new Date();
    const headers = attemptHeaders(endpoint, job, Math.floor(startedAt.getTime() / 1000));
    // An endpoint whose secrets cannot be decrypted fails alone, as a retryable attempt that
    // sends nothing: its deliveries back off and its breaker parks them until the key is back.
    const result: SendResult = endpoint.unavailable
      ? {
          outcome: { kind: 'retryable', errorClass: SECRET_UNAVAILABLE },
          durationMs: 0,
          snippet: null,
          error: endpoint.unavailable,
        }
      : await this.deps.sender.send({ url: endpoint.url, headers, body: job.payload });
    // The endpoint's own max_attempts / backoff override the global policy (sql/0007).
    const decision = nextAttempt(
      job.attempt,
      result.outcome,
      policyFor(this.deps.policy, endpoint.retry),
      Math.random,
    );
    this.deps.completions.add(attemptRecord(job, startedAt, result, decision), leaseEndsAt);
  }
}
