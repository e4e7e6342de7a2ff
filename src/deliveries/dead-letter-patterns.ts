/**
 * Naming what an endpoint's dead letters have in common: a pure function of the aggregate
 * figures (deliveries/dead-letter-analysis.ts computes them in SQL) and the thresholds, with no
 * clock and no database, so every branch is unit-tested. The patterns and their numbers follow
 * seed 004: 50 dead letters for one endpoint within an hour is an outage; 401/403 dominating
 * means changed credentials, 429 an exceeded rate limit; 2-3 a day, spread out, is the drip
 * that slowly exhausts retries.
 */

import { type ErrorCategory, errorCategory, errorClassAdvice } from './dead-letter-advice.js';

export const DEAD_LETTER_PATTERNS = [
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
] as const;
export type DeadLetterPattern = (typeof DEAD_LETTER_PATTERNS)[number];

/** One endpoint's dead letters in the analysis window, as the aggregate query returns them. */
export interface DeadLetterFigures {
  deadCount: number;
  /** The most dead letters that fell within any one `clusterWindowSeconds` (a sliding window). */
  peakInClusterWindow: number;
  firstDeadAt: Date;
  lastDeadAt: Date;
  /** How many dead letters had each last error class (`http_503`, `connection_refused`, …). */
  errorCounts: Record<string, number>;
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

/** Per category: how many dead letters, and its most common class (ties: the first by name). */
function byCategory(errorCounts: Record<string, number>) {
  const categories = new Map<ErrorCategory, { count: number; top: string; topCount: number }>();
  for (const [errorClass, n] of Object.entries(errorCounts).sort(([a], [b]) => a.localeCompare(b))) {
    const category = errorCategory(errorClass);
    const c = categories.get(category) ?? { count: 0, top: errorClass, topCount: 0 };
    c.count += n;
    if (n > c.topCount) Object.assign(c, { top: errorClass, topCount: n });
    categories.set(category, c);
  }
  return categories;
}

/** The advice of a category's most common class; a category of several classes replays by endpoint. */
function advise(c: { count: number; top: string; topCount: number }): string {
  return c.topCount === c.count
    ? errorClassAdvice(c.top)
    : errorClassAdvice(c.top, "then replay the endpoint's dead letters (endpoint_id).");
}

/** The patterns a dominant error category makes, in the order they are judged. */
const CAUSES: [ErrorCategory, DeadLetterPattern, string, 'atLeast' | 'moreThan'][] = [
  // hookpost's own settings and trust store first: no partner can fix them, and they name a setting.
  ['hookpost_config', 'hookpost_config', 'hookpost itself stopped these', 'atLeast'],
  ['tls', 'tls_failure', 'TLS failed', 'atLeast'],
  ['auth', 'auth_failure', 'Mostly 401/403 or a refused token', 'atLeast'],
  ['rate_limited', 'rate_limited', 'Mostly 429', 'atLeast'],
  // Permanent answers die at their first attempt: a burst of them is no outage.
  ['rejected', 'rejected', 'The partner rejects them', 'moreThan'],
  ['moved', 'endpoint_moved', 'The endpoint moved', 'moreThan'],
];
/** Shapes in time come before these: an outage of refused connections is an outage first. */
const SYMPTOMS: [ErrorCategory, DeadLetterPattern][] = [
  ['unreachable', 'unreachable'],
  ['server_error', 'server_errors'],
  ['timeout', 'timeouts'],
];

/**
 * Classifies one endpoint's dead letters. Causes come before shapes: a burst of 401s is first of
 * all a credentials problem, and replaying it before the credentials are fixed only fails again.
 * A cause "dominates" at `dominantShare` (hookpost's settings, TLS, credentials, rate limits:
 * worth naming at half) or above it (the rest: a 50/50 split is not "mostly" either).
 */
export function classifyDeadLetters(
  figures: DeadLetterFigures,
  thresholds: PatternThresholds = DEFAULT_PATTERN_THRESHOLDS,
): PatternVerdict {
  const { deadCount } = figures;
  const categories = byCategory(figures.errorCounts);
  const share = (n: number) => (deadCount === 0 ? 0 : n / deadCount);
  const percent = (n: number) => `${Math.round(share(n) * 100)}%`;
  const dominant = (category: ErrorCategory, rule: 'atLeast' | 'moreThan') => {
    const c = categories.get(category);
    if (!c || deadCount === 0) return undefined;
    const s = share(c.count);
    return (rule === 'atLeast' ? s >= thresholds.dominantShare : s > thresholds.dominantShare)
      ? c
      : undefined;
  };
  for (const [category, pattern, lead, rule] of CAUSES) {
    const c = dominant(category, rule);
    if (c) return { pattern, advice: `${lead} (${c.top}, ${percent(c.count)}): ${advise(c)}` };
  }
  // The most common class overall, named by the shapes below when it dominates.
  const top = [...categories.values()].sort((a, b) => b.count - a.count)[0];
  const mostly = top && share(top.count) > thresholds.dominantShare ? ` (mostly ${top.top})` : '';
  if (figures.peakInClusterWindow >= thresholds.clusterCount) {
    return {
      pattern: 'outage_cluster',
      advice:
        `${figures.peakInClusterWindow} dead letters within ${windowLabel(thresholds.clusterWindowSeconds)}${mostly}: ` +
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
        `A few a day, spread out${mostly}: intermittent failures outlast the retries; raise max_attempts ` +
        'for this endpoint (PATCH /v1/endpoints/{id}) or look at its timeouts and p95 latency.',
    };
  }
  for (const [category, pattern] of SYMPTOMS) {
    const c = dominant(category, 'moreThan');
    if (c) return { pattern, advice: `Mostly ${c.top} (${percent(c.count)}): ${advise(c)}` };
  }
  return {
    pattern: 'mixed',
    advice:
      'No single cause dominates: read the attempts of a few of them (GET /v1/deliveries/{id}) ' +
      'before replaying.',
  };
}
