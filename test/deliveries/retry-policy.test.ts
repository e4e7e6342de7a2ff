import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  backoffMs,
  nextAttempt,
  parseRetryAfter,
  type RetryPolicy,
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
      { status: 'failed', delayMs: 0.5 * 3_600_000 },
    );
    assert.deepEqual(
      nextAttempt(8, fail, policy, () => 0.5),
      { status: 'dead_letter', reason: 'max_attempts_exhausted' },
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
      { status: 'failed', delayMs: 120_000 },
    );
    const greedy = { ...limited, retryAfterSeconds: 86_400 * 365 };
    assert.deepEqual(
      nextAttempt(1, greedy, policy, () => 0),
      { status: 'failed', delayMs: 600_000 },
    );
    assert.deepEqual(
      nextAttempt(1, { ...limited, retryAfterSeconds: 1 }, policy, () => 0.5),
      { status: 'failed', delayMs: 30_000 },
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
});
