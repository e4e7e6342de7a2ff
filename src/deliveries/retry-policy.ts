/**
 * What happens after an attempt: a pure function of the attempt's outcome, the attempt number,
 * the policy and a random source, so every branch is unit-tested without a database or a clock.
 */

export type AttemptOutcome =
  | { kind: 'success'; statusCode: number }
  | { kind: 'retryable'; statusCode?: number; errorClass: string; retryAfterSeconds?: number }
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
  | { status: 'failed'; delayMs: number }
  | { status: 'dead_letter'; reason: string };

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
  // dead-lettered for it, even on the last attempt.
  if (outcome.kind === 'shutdown') return { status: 'failed', delayMs: 0 };
  if (attempt >= policy.maxAttempts) return { status: 'dead_letter', reason: 'max_attempts_exhausted' };
  let delayMs = backoffMs(attempt, policy, random);
  if (outcome.retryAfterSeconds !== undefined) {
    // The partner said when it can take more: wait at least that long, within our bound.
    const asked = Math.min(outcome.retryAfterSeconds, policy.retryAfterMaxSeconds) * 1000;
    delayMs = Math.max(delayMs, Math.round(asked));
  }
  return { status: 'failed', delayMs };
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
 * maxAttempts × timeout + Σ_{k=1}^{maxAttempts-1} min(cap, base·2^k). Not included (README,
 * "Recovering missed events"): time parked behind an open circuit or a disabled endpoint (not
 * charged as attempts), a partner's Retry-After above the backoff, and dispatcher lag.
 */
export function redeliveryWindowSeconds(policy: RetryPolicy, requestTimeoutMs: number): number {
  let seconds = (policy.maxAttempts * requestTimeoutMs) / 1000;
  for (let k = 1; k < policy.maxAttempts; k++)
    seconds += Math.min(policy.capSeconds, policy.baseSeconds * 2 ** k);
  return Math.ceil(seconds);
}
