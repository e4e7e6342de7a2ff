/**
 * An endpoint's latency percentiles as a time series, for the admin page's chart. Reads the same
 * per-minute histograms as latencyWindow(): each step's minutes are summed bucket by bucket, then
 * summarised, so a step's p95 is the p95 of its attempts (averaging per-minute p95s would not be).
 */
import type { Sql } from '../db/connect.js';
import { type LatencySummary, summarize } from './latency.js';

export interface LatencyPoint extends LatencySummary {
  at: Date;
}

/** Steps of `stepMinutes` over the last `hours`, oldest first; steps with no attempt are left out. */
export async function latencySeries(
  sql: Sql,
  endpointId: string,
  hours: number,
  stepMinutes: number,
): Promise<LatencyPoint[]> {
  // At most hours·60 rows of one endpoint (the primary key's prefix), summed per step and bucket.
  const rows = await sql<{ at: Date; buckets: number[] }[]>`
    SELECT at, array_agg(total ORDER BY ord) AS buckets FROM (
      SELECT date_bin(make_interval(mins => ${stepMinutes}), minute, TIMESTAMPTZ '2000-01-01') AS at,
             ord, sum(x)::int AS total
      FROM endpoint_latency_minutes, unnest(buckets) WITH ORDINALITY AS u(x, ord)
      WHERE endpoint_id = ${endpointId} AND minute > now() - make_interval(secs => ${hours * 3600})
      GROUP BY 1, ord
    ) s GROUP BY at ORDER BY at`;
  return rows.map((r) => ({ at: r.at, ...summarize(r.buckets) }));
}
