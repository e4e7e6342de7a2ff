import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  classifyDeadLetters,
  DEFAULT_PATTERN_THRESHOLDS,
  type DeadLetterFigures,
} from '../../src/deliveries/dead-letter-patterns.js';

const HOUR = 3_600_000;
const at = (hoursAgo: number) => new Date(Date.UTC(2026, 4, 10, 12) - hoursAgo * HOUR);

/** Figures for `count` dead letters, none of them 401/403/429, spread from `spanHours` ago to now. */
function figures(
  count: number,
  spanHours: number,
  extra: Partial<DeadLetterFigures> = {},
): DeadLetterFigures {
  return {
    deadCount: count,
    authFailures: 0,
    rateLimited: 0,
    peakInClusterWindow: 1,
    firstDeadAt: at(spanHours),
    lastDeadAt: at(0),
    ...extra,
  };
}
const pattern = (f: DeadLetterFigures, t = DEFAULT_PATTERN_THRESHOLDS) => classifyDeadLetters(f, t).pattern;

describe('classifyDeadLetters', () => {
  it('has the seed numbers as defaults: 50 within an hour is an outage', () => {
    assert.equal(DEFAULT_PATTERN_THRESHOLDS.clusterCount, 50);
    assert.equal(DEFAULT_PATTERN_THRESHOLDS.clusterWindowSeconds, 3600);
    assert.equal(pattern(figures(60, 2, { peakInClusterWindow: 50 })), 'outage_cluster');
    assert.equal(pattern(figures(60, 2, { peakInClusterWindow: 49 })), 'mixed');
  });

  it('names credentials when 401/403 make up at least half, before the cluster shape', () => {
    assert.equal(pattern(figures(80, 1, { authFailures: 80, peakInClusterWindow: 80 })), 'auth_failure');
    assert.equal(pattern(figures(10, 1, { authFailures: 5 })), 'auth_failure');
    assert.equal(pattern(figures(10, 1, { authFailures: 4 })), 'mixed');
    assert.equal(pattern(figures(1, 0, { authFailures: 1 })), 'auth_failure');
  });

  it('names the rate limit when 429 dominates', () => {
    assert.equal(pattern(figures(70, 1, { rateLimited: 60, peakInClusterWindow: 70 })), 'rate_limited');
    assert.equal(pattern(figures(10, 1, { rateLimited: 3, authFailures: 3 })), 'mixed');
  });

  it('recognises a drip: a few a day, spread out, never bunched', () => {
    assert.equal(pattern(figures(7, 70)), 'gradual_drip', '7 over 3 days');
    assert.equal(pattern(figures(3, 20)), 'gradual_drip', '3 over 20 hours');
    assert.equal(pattern(figures(3, 20, { peakInClusterWindow: 3 })), 'mixed', 'bunched in one hour');
    assert.equal(pattern(figures(30, 70)), 'mixed', 'ten a day is more than a drip');
    assert.equal(pattern(figures(3, 6)), 'mixed', 'six hours is not spread out');
    assert.equal(pattern(figures(1, 0)), 'mixed', 'one dead letter is no pattern');
  });

  it('uses the thresholds it is given', () => {
    const strict = { ...DEFAULT_PATTERN_THRESHOLDS, clusterCount: 5, dominantShare: 0.9 };
    assert.equal(pattern(figures(10, 1, { peakInClusterWindow: 5 }), strict), 'outage_cluster');
    assert.equal(pattern(figures(10, 1, { authFailures: 8 }), strict), 'mixed');
    const tenMinutes = { ...DEFAULT_PATTERN_THRESHOLDS, clusterWindowSeconds: 600, clusterCount: 5 };
    assert.match(
      classifyDeadLetters(figures(9, 1, { peakInClusterWindow: 9 }), tenMinutes).advice,
      /10 minutes/,
    );
  });

  it('gives one line of advice for every pattern', () => {
    const cases = [
      figures(60, 1, { peakInClusterWindow: 60 }),
      figures(5, 1, { authFailures: 5 }),
      figures(5, 1, { rateLimited: 5 }),
      figures(4, 48),
      figures(9, 2, { peakInClusterWindow: 9 }),
    ];
    const verdicts = cases.map((f) => classifyDeadLetters(f));
    assert.deepEqual(
      verdicts.map((v) => v.pattern),
      ['outage_cluster', 'auth_failure', 'rate_limited', 'gradual_drip', 'mixed'],
    );
    for (const v of verdicts) {
      assert.ok(v.advice.length > 20 && !v.advice.includes('\n'), v.advice);
    }
  });

  it('names a dominant error class instead of saying no cause dominates (mixed in time)', () => {
    const all500 = classifyDeadLetters(figures(9, 2, { primaryError: 'http_500', primaryErrorCount: 9 }));
    assert.equal(all500.pattern, 'mixed');
    assert.match(all500.advice, /^Mostly http_500 \(100%\): the partner's server fails/);
    assert.match(all500.advice, /error_class=http_500/);
    assert.doesNotMatch(all500.advice, /No single cause/);
    const timeouts = classifyDeadLetters(figures(10, 2, { primaryError: 'timeout', primaryErrorCount: 6 }));
    assert.match(timeouts.advice, /^Mostly timeout \(60%\): .*HOOKPOST_REQUEST_TIMEOUT_MS/);
    const split = classifyDeadLetters(figures(10, 2, { primaryError: 'http_502', primaryErrorCount: 4 }));
    assert.match(split.advice, /No single cause dominates/);
  });
});
