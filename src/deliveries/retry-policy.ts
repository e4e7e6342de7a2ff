/**
 * The retry policy, in one module: what happens after an attempt (backoff, exhaustion, which
 * attempts count), an endpoint's overrides over the global settings, and the redelivery window
 * they add up to. The attempt runner decides with nextAttempt, a pure function of the outcome,
 * the attempt number, the policy and a random source (unit-tested without a database or a
 * clock); the lease reaper, which decides in SQL, composes retrySql, the same formulas written
 * for a statement (a test holds the two to the same numbers). Why: docs/architecture.md
 * ("Per-endpoint retry policy"), the formula for users: docs/delivery.md ("Retries").
 */
import type { Executor, Fragment } from '../db/connect.js';

export type AttemptOutcome =
  | { kind: 'success'; statusCode: number }
  | {
      kind: 'retryable';
      statusCode?: number;
      errorClass: string;
      retryAfterSeconds?: number;
      /**
       * Nothing was sent (the endpoint's secret cannot be decrypted, say): retried with backoff
       * like any retryable failure, but the attempt does not count against max_attempts.
       */
      notSent?: true;
    }
  | { kind: 'permanent'; statusCode?: number; errorClass: string }
  /** Cut short by our own shutdown: says nothing about the endpoint, costs the delivery nothing. */
  | { kind: 'shutdown'; statusCode?: undefined; errorClass: 'shutdown' };

export interface RetryPolicy {
  baseSeconds: number;
  capSeconds: number;
  maxAttempts: number;
  /** Upper bound on an honoured Retry-After, so a partner cannot park a delivery for a year. */
  retryAfterMaxSeconds: number;
}

export type Decision =
  | { status: 'delivered' }
  /** `charged`: whether the attempt counts against max_attempts (see isCharged). */
  | { status: 'failed'; delayMs: number; charged: boolean }
  | { status: 'dead_letter'; reason: string };

/**
 * Whether an attempt counts against the delivery's max_attempts: every attempt that was sent,
 * except one our own shutdown cut short (it says nothing about the endpoint). One that sent
 * nothing (`notSent`) does not count either. Uncharged attempts are still logged; the next one
 * carries the same attempt number.
 */
export function isCharged(outcome: AttemptOutcome): boolean {
  if (outcome.kind === 'shutdown') return false;
  return !(outcome.kind === 'retryable' && outcome.notSent);
}

/**
 * Full jitter: random(0, min(cap, base·2^attempt)). `attempt` is the number of the attempt that
 * just ended (1 for the first), so the first retry waits up to 2·base.
 */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.capSeconds, policy.baseSeconds * 2 ** attempt);
  return Math.round(random() * ceiling * 1000);
}

/** Decides the delivery's next state after attempt number `attempt`. */
export function nextAttempt(
  attempt: number,
  outcome: AttemptOutcome,
  policy: RetryPolicy,
  random: () => number,
): Decision {
  if (outcome.kind === 'success') return { status: 'delivered' };
  if (outcome.kind === 'permanent') return { status: 'dead_letter', reason: outcome.errorClass };
  // Our own shutdown aborted the attempt: due again at once for another dispatcher, never
  // dead-lettered for it, even on the last attempt, and not charged.
  if (outcome.kind === 'shutdown') return { status: 'failed', delayMs: 0, charged: false };
  const charged = isCharged(outcome);
  if (charged && attempt >= policy.maxAttempts)
    return { status: 'dead_letter', reason: 'max_attempts_exhausted' };
  let delayMs = backoffMs(attempt, policy, random);
  if (outcome.retryAfterSeconds !== undefined) {
    // The partner said when it can take more: wait at least that long, within our bound.
    const asked = Math.min(outcome.retryAfterSeconds, policy.retryAfterMaxSeconds) * 1000;
    delayMs = Math.max(delayMs, Math.round(asked));
  }
  return { status: 'failed', delayMs, charged };
}

/** Parses Retry-After (delta seconds or an HTTP date) into seconds from `now`; undefined if unusable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - now) / 1000);
}

/** HTTP statuses that are worth retrying: timeouts, too early, rate limited, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** An endpoint's own retry settings (sql/0007); null fields fall back to the global policy. */
export interface RetryOverrides {
  maxAttempts: number | null;
  retryBaseSeconds: number | null;
  retryCapSeconds: number | null;
}

/** The policy an endpoint's deliveries follow: its overrides over the global defaults. */
export function policyFor(global: RetryPolicy, overrides: RetryOverrides | undefined): RetryPolicy {
  if (!overrides) return global;
  return {
    ...global,
    maxAttempts: overrides.maxAttempts ?? global.maxAttempts,
    baseSeconds: overrides.retryBaseSeconds ?? global.baseSeconds,
    capSeconds: overrides.retryCapSeconds ?? global.capSeconds,
  };
}

/**
 * The redelivery window: the longest time from enqueue to the end of the last automatic
 * attempt, when every attempt runs into the timeout and every backoff draws its ceiling:
 * maxAttempts × timeout + Σ_{k=1}^{maxAttempts-1} min(cap, base·2^k). Not included
 * (docs/delivery.md, "Retries"): time parked behind an open circuit or a disabled endpoint, and
 * attempts that do not count (isCharged), a partner's Retry-After above the backoff, and
 * dispatcher lag.
 */
export function redeliveryWindowSeconds(policy: RetryPolicy, requestTimeoutMs: number): number {
  let seconds = (policy.maxAttempts * requestTimeoutMs) / 1000;
  for (let k = 1; k < policy.maxAttempts; k++)
    seconds += Math.min(policy.capSeconds, policy.baseSeconds * 2 ** k);
  return Math.ceil(seconds);
}

/**
 * The same policy for a statement that decides in SQL (the lease reaper), over an endpoint row
 * aliased `endpoint` (its overrides, sql/0007; NULL columns fall back to `global`, as policyFor
 * does):
 * - `exhausted(attempts)`: whether `attempts` charged attempts use up the budget;
 * - `backoffSeconds(attempt, random)`: backoffMs's full jitter in seconds after attempt number
 *   `attempt`; `random` defaults to SQL's random() (a test passes a constant).
 */
export function retrySql(sql: Executor, global: RetryPolicy, endpoint: Fragment) {
  const maxAttempts = sql`coalesce(${endpoint}.max_attempts, ${global.maxAttempts}::int)`;
  const base = sql`coalesce(${endpoint}.retry_base_seconds, ${global.baseSeconds}::float8)`;
  const cap = sql`coalesce(${endpoint}.retry_cap_seconds, ${global.capSeconds}::float8)`;
  return {
    exhausted: (attempts: Fragment): Fragment => sql`(${attempts} >= ${maxAttempts})`,
    backoffSeconds: (attempt: Fragment, random: Fragment = sql`random()`): Fragment =>
      sql`(${random} * least(${cap}, ${base} * power(2::float8, ${attempt})))`,
  };
}
