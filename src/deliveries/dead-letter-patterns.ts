/**
 * Naming what an endpoint's dead letters have in common: a pure function of the aggregate
 * figures (deliveries/dead-letter-analysis.ts computes them in SQL) and the thresholds, with no
 * clock and no database, so every branch is unit-tested. The patterns and their numbers follow
 * seed 004: 50 dead letters for one endpoint within an hour is an outage; 401/403 dominating
 * means changed credentials, 429 an exceeded rate limit; 2-3 a day, spread out, is the drip
 * that slowly exhausts retries.
 */

export const DEAD_LETTER_PATTERNS = [
  'outage_cluster',
  'auth_failure',
  'rate_limited',
  'gradual_drip',
  'mixed',
] as const;
export type DeadLetterPattern = (typeof DEAD_LETTER_PATTERNS)[number];

/** One endpoint's dead letters in the analysis window, as the aggregate query returns them. */
export interface DeadLetterFigures {
  deadCount: number;
  /** Dead letters whose last answer was 401 or 403. */
  authFailures: number;
  /** Dead letters whose last answer was 429. */
  rateLimited: number;
  /** The most dead letters that fell within any one `clusterWindowSeconds` (a sliding window). */
  peakInClusterWindow: number;
  firstDeadAt: Date;
  lastDeadAt: Date;
  /** The most common last error class (`http_500`, `timeout`, …) and how many dead letters had it. */
  primaryError?: string | null;
  primaryErrorCount?: number;
}

export interface PatternThresholds {
  /** This many dead letters within `clusterWindowSeconds` is an outage. */
  clusterCount: number;
  clusterWindowSeconds: number;
  /** Share of dead letters (0..1) a status family needs to "dominate". */
  dominantShare: number;
  /** A drip: at most this many a day, averaged over the time they span (at least one day)... */
  dripMaxPerDay: number;
  /** ...spread over at least this long... */
  dripMinSpanSeconds: number;
  /** ...and never more than this many within one cluster window. */
  dripMaxPerClusterWindow: number;
}

/** Seed 004's numbers; the drip bounds leave room around its "2-3 a day". */
export const DEFAULT_PATTERN_THRESHOLDS: PatternThresholds = {
  clusterCount: 50,
  clusterWindowSeconds: 3600,
  dominantShare: 0.5,
  dripMaxPerDay: 5,
  dripMinSpanSeconds: 12 * 3600,
  dripMaxPerClusterWindow: 2,
};

export interface PatternVerdict {
  pattern: DeadLetterPattern;
  /** One line an operator can act on. */
  advice: string;
}

const DAY_SECONDS = 86_400;

function windowLabel(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'one hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/**
 * Classifies one endpoint's dead letters. Causes come before shapes: a burst of 401s is first of
 * all a credentials problem, and replaying it before the credentials are fixed only fails again.
 */
export function classifyDeadLetters(
  figures: DeadLetterFigures,
  thresholds: PatternThresholds = DEFAULT_PATTERN_THRESHOLDS,
): PatternVerdict {
  const { deadCount } = figures;
  const share = (n: number) => (deadCount === 0 ? 0 : n / deadCount);
  if (deadCount > 0 && share(figures.authFailures) >= thresholds.dominantShare) {
    return {
      pattern: 'auth_failure',
      advice:
        'Mostly 401/403: the partner changed credentials or access rules; update the endpoint ' +
        '(headers or secret) with them, then replay.',
    };
  }
  if (deadCount > 0 && share(figures.rateLimited) >= thresholds.dominantShare) {
    return {
      pattern: 'rate_limited',
      advice:
        "Mostly 429: hookpost sends faster than the partner accepts; set the endpoint's " +
        'rate_limit_per_second below their limit, then replay.',
    };
  }
  if (figures.peakInClusterWindow >= thresholds.clusterCount) {
    return {
      pattern: 'outage_cluster',
      advice:
        `${figures.peakInClusterWindow} dead letters within ${windowLabel(thresholds.clusterWindowSeconds)}: ` +
        'the endpoint was down longer than the retry schedule; replay once it answers again, and ' +
        'for outages this long raise retry_cap_seconds or max_attempts for this endpoint ' +
        '(PATCH /v1/endpoints/{id}) so its retries outlast them.',
    };
  }
  const spanSeconds = (figures.lastDeadAt.getTime() - figures.firstDeadAt.getTime()) / 1000;
  const perDay = deadCount / (Math.max(spanSeconds, DAY_SECONDS) / DAY_SECONDS);
  if (
    deadCount >= 2 &&
    spanSeconds >= thresholds.dripMinSpanSeconds &&
    perDay <= thresholds.dripMaxPerDay &&
    figures.peakInClusterWindow <= thresholds.dripMaxPerClusterWindow
  ) {
    return {
      pattern: 'gradual_drip',
      advice:
        'A few a day, spread out: intermittent failures outlast the retries; raise max_attempts ' +
        'for this endpoint (PATCH /v1/endpoints/{id}) or look at its timeouts and p95 latency.',
    };
  }
  const primary = figures.primaryError;
  if (deadCount > 0 && primary && share(figures.primaryErrorCount ?? 0) > thresholds.dominantShare) {
    // None of the patterns above, but one error class still dominates: name it rather than
    // calling the set causeless ("mixed" is about the shape in time, not about the cause). More
    // than the share, not at least: a 50/50 split is not "mostly" either of them.
    const percent = Math.round(share(figures.primaryErrorCount ?? 0) * 100);
    return { pattern: 'mixed', advice: `Mostly ${primary} (${percent}%): ${errorClassAdvice(primary)}` };
  }
  return {
    pattern: 'mixed',
    advice:
      'No single cause dominates: read the attempts of a few of them (GET /v1/deliveries/{id}) ' +
      'before replaying.',
  };
}

/** What to do about one error class, once it is known to dominate. */
function errorClassAdvice(errorClass: string): string {
  const replay = `then replay with error_class=${errorClass}.`;
  const status = /^http_(\d{3})$/.exec(errorClass)?.[1];
  if (status?.startsWith('5')) {
    return `the partner's server fails these requests; read the response snippets (GET /v1/deliveries/{id}), get it fixed (if they pass on a later try, raise max_attempts for this endpoint), ${replay}`;
  }
  if (status?.startsWith('4')) {
    return `the partner rejects these payloads (no retry for a ${status}); read the response snippets, fix the payload or the endpoint settings, ${replay}`;
  }
  if (errorClass === 'timeout') {
    return `the partner answers slower than HOOKPOST_REQUEST_TIMEOUT_MS; check its p95 (GET /v1/endpoints/{id}/health), ${replay}`;
  }
  if (errorClass === 'redirect_not_followed' || errorClass === 'gone') {
    return `the endpoint URL moved or is gone; update the endpoint's url, ${replay}`;
  }
  return `the endpoint is unreachable (network, DNS or TLS); check its url and the partner's server, ${replay}`;
}
