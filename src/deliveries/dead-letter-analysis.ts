/**
 * The dead-letter analysis: per endpoint, how many deliveries died in the last N hours, of what,
 * when, and which pattern that makes (deliveries/dead-letter-patterns.ts). One aggregate
 * statement; the API and `hookpost dead-letters` both call analyzeDeadLetters().
 */
import type { Sql } from '../db/connect.js';
import { isUnrestricted, type TenantScope, tenantIs } from '../tenants/scope.js';
import { shownUrl } from '../util/url.js';
import {
  classifyDeadLetters,
  DEFAULT_PATTERN_THRESHOLDS,
  type DeadLetterPattern,
  type PatternThresholds,
} from './dead-letter-patterns.js';

/** The longest analysis window: a month of dead letters is plenty to see a pattern. */
export const MAX_ANALYSIS_HOURS = 720;

export interface AnalysisOptions {
  hours: number;
  endpointId?: string | undefined;
  /** Most endpoints returned, most dead letters first. */
  limit: number;
  thresholds?: PatternThresholds;
}

export interface EndpointDeadLetters {
  endpoint_id: string;
  /**
   * The endpoint's URL as origin and path: its query string and user info are left out, since
   * partners put tokens there and this analysis is readable with `deliveries:read` alone.
   */
  endpoint_url: string | null;
  endpoint_description: string | null;
  dead_count: number;
  /** The most common error class (`http_503`, `timeout`, …), usable as a replay `error_class`. */
  primary_error: string | null;
  primary_status_code: number | null;
  /** How many dead letters ended with each error class. */
  error_counts: Record<string, number>;
  first_dead_at: Date;
  last_dead_at: Date;
  avg_attempts: number;
  pattern: DeadLetterPattern;
  advice: string;
}

/** One endpoint's aggregate: the route's fields plus the counts the pattern is judged by. */
interface AggregateRow extends Omit<EndpointDeadLetters, 'pattern' | 'advice' | 'endpoint_url'> {
  url: string | null;
  peak_in_window: number;
}

/**
 * The window's dead letters come from the partial index on dead_at (`dead_at >= …` implies
 * `dead_at IS NOT NULL`), so the cost follows the number of recent dead letters, not the size of
 * the history. The inner window function counts, for each dead letter, how many of the same
 * endpoint died within the cluster window before it (a sliding window, so a burst that straddles
 * an hour boundary is not cut in two); the outer aggregate keeps the largest such count.
 */
export async function analyzeDeadLetters(
  sql: Sql,
  scope: TenantScope,
  options: AnalysisOptions,
): Promise<EndpointDeadLetters[]> {
  const thresholds = options.thresholds ?? DEFAULT_PATTERN_THRESHOLDS;
  const rows = await sql<AggregateRow[]>`
    WITH dead AS (
      SELECT d.endpoint_id, d.dead_at, d.attempt_count, d.last_status_code, d.last_error_class,
        count(*) OVER (
          PARTITION BY d.endpoint_id ORDER BY d.dead_at
          RANGE BETWEEN make_interval(secs => ${thresholds.clusterWindowSeconds}) PRECEDING AND CURRENT ROW
        ) AS in_window
      FROM deliveries d
      WHERE d.dead_at >= now() - make_interval(secs => ${options.hours * 3600})
        AND d.status = 'dead_letter'
        ${isUnrestricted(scope) ? sql`` : sql`AND d.endpoint_id IN (SELECT e.id FROM endpoints e WHERE ${tenantIs(sql, scope, 'e.tenant_id')})`}
        ${options.endpointId === undefined ? sql`` : sql`AND d.endpoint_id = ${options.endpointId}`}
    ),
    by_class AS (
      SELECT endpoint_id, jsonb_object_agg(last_error_class, n) AS error_counts
      FROM (SELECT endpoint_id, last_error_class, count(*)::int AS n FROM dead
            WHERE last_error_class IS NOT NULL GROUP BY endpoint_id, last_error_class) c
      GROUP BY endpoint_id
    ),
    agg AS (
      SELECT endpoint_id,
        count(*)::int AS dead_count,
        mode() WITHIN GROUP (ORDER BY last_error_class) AS primary_error,
        mode() WITHIN GROUP (ORDER BY last_status_code) AS primary_status_code,
        min(dead_at) AS first_dead_at,
        max(dead_at) AS last_dead_at,
        round(avg(attempt_count), 2)::float8 AS avg_attempts,
        max(in_window)::int AS peak_in_window
      FROM dead
      GROUP BY endpoint_id
      ORDER BY dead_count DESC, endpoint_id
      LIMIT ${options.limit}
    )
    -- The page's endpoints only: the URL and description are read for at most one page of rows.
    SELECT agg.*, coalesce(b.error_counts, '{}') AS error_counts, e.url, e.description AS endpoint_description
    FROM agg LEFT JOIN by_class b ON b.endpoint_id = agg.endpoint_id LEFT JOIN endpoints e ON e.id = agg.endpoint_id
    ORDER BY agg.dead_count DESC, agg.endpoint_id`;
  return rows.map((row) => {
    const verdict = classifyDeadLetters(
      {
        deadCount: row.dead_count,
        peakInClusterWindow: row.peak_in_window,
        firstDeadAt: row.first_dead_at,
        lastDeadAt: row.last_dead_at,
        errorCounts: row.error_counts,
      },
      thresholds,
    );
    return {
      endpoint_id: row.endpoint_id,
      endpoint_url: row.url === null ? null : (shownUrl(row.url) ?? null),
      endpoint_description: row.endpoint_description || null,
      dead_count: row.dead_count,
      primary_error: row.primary_error,
      primary_status_code: row.primary_status_code,
      error_counts: row.error_counts,
      first_dead_at: row.first_dead_at,
      last_dead_at: row.last_dead_at,
      avg_attempts: row.avg_attempts,
      pattern: verdict.pattern,
      advice: verdict.advice,
    };
  });
}
