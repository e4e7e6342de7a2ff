import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorCategory, errorClassAdvice } from '../../src/deliveries/dead-letter-advice.js';
import {
  classifyDeadLetters,
  DEFAULT_PATTERN_THRESHOLDS,
  type DeadLetterFigures,
} from '../../src/deliveries/dead-letter-patterns.js';

const HOUR = 3_600_000;
const at = (hoursAgo: number) => new Date(Date.UTC(2026, 4, 10, 12) - hoursAgo * HOUR);

/**
 * Figures for `count` dead letters spread from `spanHours` ago to now; unless `extra` says
 * otherwise, a third each of http_500, http_400 and timeout (no class dominates).
 */
function figures(
  count: number,
  spanHours: number,
  extra: Partial<DeadLetterFigures> = {},
): DeadLetterFigures {
  const third = Math.floor(count / 3);
  return {
    deadCount: count,
    peakInClusterWindow: 1,
    firstDeadAt: at(spanHours),
    lastDeadAt: at(0),
    errorCounts: { http_500: count - 2 * third, http_400: third, timeout: third },
    ...extra,
  };
}
const only = (errorCounts: Record<string, number>) => ({ errorCounts });
const pattern = (f: DeadLetterFigures, t = DEFAULT_PATTERN_THRESHOLDS) => classifyDeadLetters(f, t).pattern;

describe('classifyDeadLetters', () => {
  it('has the seed numbers as defaults: 50 within an hour is an outage', () => {
    assert.equal(DEFAULT_PATTERN_THRESHOLDS.clusterCount, 50);
    assert.equal(DEFAULT_PATTERN_THRESHOLDS.clusterWindowSeconds, 3600);
    assert.equal(pattern(figures(60, 2, { peakInClusterWindow: 50 })), 'outage_cluster');
    assert.equal(pattern(figures(60, 2, { peakInClusterWindow: 49 })), 'mixed');
  });

  it('names credentials when 401/403 make up at least half, before the cluster shape', () => {
    assert.equal(
      pattern(figures(80, 1, { peakInClusterWindow: 80, ...only({ http_401: 80 }) })),
      'auth_failure',
    );
    assert.equal(pattern(figures(10, 1, only({ http_401: 3, http_403: 2, http_502: 5 }))), 'auth_failure');
    assert.equal(pattern(figures(10, 1, only({ http_401: 4, http_502: 3, http_400: 3 }))), 'mixed');
    assert.equal(pattern(figures(1, 0, only({ http_403: 1 }))), 'auth_failure');
    assert.equal(pattern(figures(2, 0, only({ auth_failed: 2 }))), 'auth_failure', 'a refused token');
  });

  it('names the rate limit when 429 dominates', () => {
    assert.equal(
      pattern(figures(70, 1, { peakInClusterWindow: 70, ...only({ http_429: 60, http_500: 10 }) })),
      'rate_limited',
    );
    assert.equal(pattern(figures(10, 1, only({ http_429: 3, http_401: 3, http_500: 4 }))), 'mixed');
  });

  it('recognises a drip: a few a day, spread out, never bunched', () => {
    assert.equal(pattern(figures(7, 70)), 'gradual_drip', '7 over 3 days');
    assert.equal(pattern(figures(3, 20)), 'gradual_drip', '3 over 20 hours');
    assert.equal(pattern(figures(3, 20, { peakInClusterWindow: 3 })), 'mixed', 'bunched in one hour');
    assert.equal(pattern(figures(30, 70)), 'mixed', 'ten a day is more than a drip');
    assert.equal(pattern(figures(3, 6)), 'mixed', 'six hours is not spread out');
  });

  it('follows the dominant error class: a set of refused connections is not mixed', () => {
    const refused = classifyDeadLetters(figures(9, 2, only({ connection_refused: 9 })));
    assert.equal(refused.pattern, 'unreachable');
    assert.match(refused.advice, /^Mostly connection_refused \(100%\): .*host and port/);
    assert.match(refused.advice, /error_class=connection_refused/);
    assert.equal(pattern(figures(1, 0, only({ connection_refused: 1 }))), 'unreachable', 'even one');
    // Several classes of one kind add up: refused, reset and DNS are all "unreachable".
    const several = classifyDeadLetters(
      figures(10, 2, only({ connection_refused: 4, dns_error: 3, http_500: 3 })),
    );
    assert.equal(several.pattern, 'unreachable');
    assert.match(several.advice, /replay the endpoint's dead letters/, 'no single class to replay by');
    assert.equal(pattern(figures(9, 2, only({ http_503: 9 }))), 'server_errors');
    assert.equal(pattern(figures(10, 2, only({ timeout: 6, http_500: 4 }))), 'timeouts');
    assert.match(
      classifyDeadLetters(figures(10, 2, only({ timeout: 6 }))).advice,
      /HOOKPOST_REQUEST_TIMEOUT_MS/,
    );
    assert.equal(pattern(figures(9, 2, only({ http_400: 9 }))), 'rejected');
    assert.equal(pattern(figures(9, 2, only({ gone: 9 }))), 'endpoint_moved');
    assert.equal(pattern(figures(10, 2, only({ http_502: 5, http_400: 5 }))), 'mixed', 'a 50/50 split');
  });

  it('calls a burst of permanent rejections what it is, not an outage', () => {
    const burst = { peakInClusterWindow: 60, ...only({ http_422: 60 }) };
    assert.equal(pattern(figures(60, 1, burst)), 'rejected');
    // A burst of refused connections is an outage first, and its advice names the class.
    const down = classifyDeadLetters(
      figures(60, 1, { peakInClusterWindow: 60, ...only({ connection_refused: 60 }) }),
    );
    assert.equal(down.pattern, 'outage_cluster');
    assert.match(down.advice, /\(mostly connection_refused\)/);
  });

  it("names hookpost's own setting when hookpost caused the dead letters, whatever their shape", () => {
    const cases: [string, RegExp][] = [
      ['private_address_blocked', /HOOKPOST_ALLOW_PRIVATE_TARGETS=true/],
      ['secret_unavailable', /HOOKPOST_SECRET_KEY\b.*HOOKPOST_SECRET_KEY_PREVIOUS/],
      ['proxy_unavailable', /HOOKPOST_EGRESS_PROXY/],
    ];
    for (const [errorClass, setting] of cases) {
      const verdict = classifyDeadLetters(
        figures(60, 1, { peakInClusterWindow: 60, ...only({ [errorClass]: 30, http_500: 30 }) }),
      );
      assert.equal(verdict.pattern, 'hookpost_config', errorClass);
      assert.match(verdict.advice, setting, errorClass);
      assert.doesNotMatch(verdict.advice, /partner's server/, errorClass);
    }
    const tls = classifyDeadLetters(figures(4, 1, only({ tls_error: 4 })));
    assert.equal(tls.pattern, 'tls_failure');
    assert.match(tls.advice, /tls\.ca_certificates/);
    assert.match(tls.advice, /tls\.client_certificate/);
  });

  it('uses the thresholds it is given', () => {
    const strict = { ...DEFAULT_PATTERN_THRESHOLDS, clusterCount: 5, dominantShare: 0.9 };
    assert.equal(pattern(figures(10, 1, { peakInClusterWindow: 5 }), strict), 'outage_cluster');
    assert.equal(pattern(figures(10, 1, only({ http_401: 8, http_500: 2 })), strict), 'mixed');
    const tenMinutes = { ...DEFAULT_PATTERN_THRESHOLDS, clusterWindowSeconds: 600, clusterCount: 5 };
    assert.match(
      classifyDeadLetters(figures(9, 1, { peakInClusterWindow: 9 }), tenMinutes).advice,
      /10 minutes/,
    );
  });

  it('gives one line of advice for every pattern', () => {
    const cases = [
      figures(5, 1, only({ private_address_blocked: 5 })),
      figures(5, 1, only({ tls_error: 5 })),
      figures(5, 1, only({ http_401: 5 })),
      figures(5, 1, only({ http_429: 5 })),
      figures(5, 1, only({ http_404: 5 })),
      figures(5, 1, only({ redirect_not_followed: 5 })),
      figures(60, 1, { peakInClusterWindow: 60 }),
      figures(4, 48),
      figures(5, 1, only({ host_unreachable: 5 })),
      figures(5, 1, only({ protocol_error: 5 })),
      figures(5, 1, only({ timeout: 5 })),
      figures(9, 2, { peakInClusterWindow: 9 }),
    ];
    const verdicts = cases.map((f) => classifyDeadLetters(f));
    assert.deepEqual(
      verdicts.map((v) => v.pattern),
      [
        'hookpost_config',
        'tls_failure',
        'auth_failure',
        'rate_limited',
        'rejected',
        'endpoint_moved',
        'outage_cluster',
        'gradual_drip',
        'unreachable',
        'server_errors',
        'timeouts',
        'mixed',
      ],
    );
    for (const v of verdicts) {
      assert.ok(v.advice.length > 20 && !v.advice.includes('\n'), v.advice);
    }
  });
});

describe('errorClassAdvice', () => {
  it('has advice for every class the sender records, ending in how to replay', () => {
    const classes = [
      'timeout',
      'connect_timeout',
      'connection_reset',
      'connection_refused',
      'host_unreachable',
      'dns_error',
      'network_error',
      'protocol_error',
      'tls_error',
      'invalid_request',
      'private_address_blocked',
      'secret_unavailable',
      'proxy_unavailable',
      'auth_failed',
      'redirect_not_followed',
      'gone',
      'http_401',
      'http_429',
      'http_500',
      'http_404',
    ];
    for (const errorClass of classes) {
      assert.notEqual(errorCategory(errorClass), 'other', errorClass);
      assert.match(errorClassAdvice(errorClass), new RegExp(`error_class=${errorClass}\\.$`), errorClass);
    }
    assert.equal(errorCategory('something_new'), 'other');
    assert.match(errorClassAdvice('something_new'), /GET \/v1\/deliveries/);
  });
});
