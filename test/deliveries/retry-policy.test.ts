import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  backoffMs,
  isCharged,
  nextAttempt,
  parseRetryAfter,
  policyFor,
  type RetryPolicy,
  redeliveryWindowSeconds,
} from '../../src/deliveries/retry-policy.js';

const policy: RetryPolicy = { baseSeconds: 30, capSeconds: 3600, maxAttempts: 8, retryAfterMaxSeconds: 600 };

describe('retry policy', () => {
  it('uses full jitter: random(0, min(cap, base·2^attempt))', () => {
    assert.equal(
      backoffMs(1, policy, () => 0),
      0,
    );
    assert.equal(
      backoffMs(1, policy, () => 0.5),
      30_000,
    );
    assert.equal(
      backoffMs(3, policy, () => 0.999999),
      Math.round(0.999999 * 240_000),
    );
    assert.equal(
      backoffMs(20, policy, () => 1),
      3_600_000,
      'capped',
    );
  });

  it('delivers on success, dead-letters permanent failures at once', () => {
    assert.deepEqual(nextAttempt(1, { kind: 'success', statusCode: 200 }, policy, Math.random), {
      status: 'delivered',
    });
    assert.deepEqual(
      nextAttempt(1, { kind: 'permanent', statusCode: 400, errorClass: 'http_400' }, policy, Math.random),
      {
        status: 'dead_letter',
        reason: 'http_400',
      },
    );
  });

  it('retries retryable failures until the last attempt, then dead-letters', () => {
    const fail = { kind: 'retryable' as const, statusCode: 500, errorClass: 'http_500' };
    assert.deepEqual(
      nextAttempt(7, fail, policy, () => 0.5),
      { status: 'failed', delayMs: 0.5 * 3_600_000, charged: true },
    );
    assert.deepEqual(
      nextAttempt(8, fail, policy, () => 0.5),
      { status: 'dead_letter', reason: 'max_attempts_exhausted' },
    );
  });

  it('a shutdown and an attempt that sent nothing are not charged: never dead-lettered for them', () => {
    const shutdown = { kind: 'shutdown', errorClass: 'shutdown' } as const;
    const notSent = { kind: 'retryable', errorClass: 'secret_unavailable', notSent: true } as const;
    assert.equal(isCharged(shutdown), false);
    assert.equal(isCharged(notSent), false);
    assert.equal(isCharged({ kind: 'retryable', errorClass: 'http_503' }), true);
    assert.equal(isCharged({ kind: 'success', statusCode: 200 }), true);
    // on the last attempt too
    assert.deepEqual(
      nextAttempt(8, shutdown, policy, () => 0.5),
      { status: 'failed', delayMs: 0, charged: false },
    );
    assert.deepEqual(
      nextAttempt(8, notSent, policy, () => 0.5),
      {
        status: 'failed',
        delayMs: 0.5 * 3_600_000,
        charged: false,
      },
    );
  });

  it('honours Retry-After as a floor, within the bound', () => {
    const limited = {
      kind: 'retryable' as const,
      statusCode: 429,
      errorClass: 'http_429',
      retryAfterSeconds: 120,
    };
    assert.deepEqual(
      nextAttempt(1, limited, policy, () => 0),
      { status: 'failed', delayMs: 120_000, charged: true },
    );
    const greedy = { ...limited, retryAfterSeconds: 86_400 * 365 };
    assert.deepEqual(
      nextAttempt(1, greedy, policy, () => 0),
      { status: 'failed', delayMs: 600_000, charged: true },
    );
    assert.deepEqual(
      nextAttempt(1, { ...limited, retryAfterSeconds: 1 }, policy, () => 0.5),
      { status: 'failed', delayMs: 30_000, charged: true },
    );
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120);
    assert.equal(parseRetryAfter('Mon, 30 Nov 2026 12:01:30 GMT', now), 90);
    assert.equal(parseRetryAfter('Mon, 30 Nov 2026 11:00:00 GMT', now), 0, 'a past date means now');
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });

  it('an endpoint overrides only the fields it sets', () => {
    const none = { maxAttempts: null, retryBaseSeconds: null, retryCapSeconds: null };
    assert.deepEqual(policyFor(policy, none), policy);
    assert.deepEqual(policyFor(policy, { ...none, maxAttempts: 2 }), { ...policy, maxAttempts: 2 });
    assert.deepEqual(policyFor(policy, { maxAttempts: 3, retryBaseSeconds: 1, retryCapSeconds: 5 }), {
      ...policy,
      maxAttempts: 3,
      baseSeconds: 1,
      capSeconds: 5,
    });
    // an attempt that ends the budget dead-letters under the endpoint's policy
    const outcome = { kind: 'retryable', errorClass: 'http_503' } as const;
    assert.equal(
      nextAttempt(2, outcome, policyFor(policy, { ...none, maxAttempts: 2 }), () => 0).status,
      'dead_letter',
    );
    assert.equal(nextAttempt(2, outcome, policy, () => 0).status, 'failed');
  });

  it('the redelivery window: every attempt times out, every backoff draws its ceiling', () => {
    // 8 × 15 s + 60 + 120 + 240 + 480 + 960 + 1920 + 3600
    assert.equal(redeliveryWindowSeconds(policy, 15_000), 7500);
    assert.equal(redeliveryWindowSeconds({ ...policy, maxAttempts: 1 }, 15_000), 15);
    assert.equal(
      redeliveryWindowSeconds({ ...policy, maxAttempts: 2, baseSeconds: 1, capSeconds: 1 }, 500),
      2,
    );
  });
});
