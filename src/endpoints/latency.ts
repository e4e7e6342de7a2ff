/**
 * Per-endpoint latency percentiles over a rolling 24 h, kept as per-minute histograms.
 *
 * Why histograms: at thousands of attempts per second, storing every sample (or a ring buffer of
 * them) costs a row per attempt; a histogram costs one upsert per endpoint per completion batch,
 * and a 24 h window is at most 1440 rows per endpoint to sum. Buckets grow by a factor of 1.25
 * from 1 ms to 120 s. A percentile is interpolated linearly inside the bucket that holds the
 * exact value, so it is never further off than that bucket (exact / 1.25 … exact × 1.25) and
 * usually within ±12%: plenty to tell a 200 ms endpoint from a 2 s one.
 */
import type { Sql } from '../db/connect.js';

const RATIO = 1.25;
/** Fewer samples than this say nothing about a p95 (seed 004 uses the same floor). */
export const MIN_PERCENTILE_SAMPLES = 20;
/** Upper bounds in ms; the last bucket (index BOUNDS.length) holds everything slower. */
export const BUCKET_BOUNDS_MS: number[] = (() => {
  const bounds: number[] = [];
  for (let b = 1; b <= 120_000; b *= RATIO) bounds.push(Math.round(b * 100) / 100);
  return bounds;
})();
export const BUCKET_COUNT = BUCKET_BOUNDS_MS.length + 1;

export function bucketIndex(ms: number): number {
  let lo = 0;
  let hi = BUCKET_BOUNDS_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ms <= BUCKET_BOUNDS_MS[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The q-quantile (0..1) of a histogram, interpolated linearly inside its bucket; null if empty. */
export function histogramQuantile(buckets: number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const target = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const count = buckets[i] ?? 0;
    if (count > 0 && seen + count >= target) {
      const lower = i === 0 ? 0 : BUCKET_BOUNDS_MS[i - 1]!;
      const upper = BUCKET_BOUNDS_MS[i] ?? lower * RATIO;
      return lower + ((target - seen) / count) * (upper - lower);
    }
    seen += count;
  }
  return BUCKET_BOUNDS_MS.at(-1)!;
}

export interface LatencySummary {
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  sampleCount: number;
}

export function summarize(buckets: number[]): LatencySummary {
  const round = (v: number | null) => (v === null ? null : Math.round(v));
  return {
    p50Ms: round(histogramQuantile(buckets, 0.5)),
    p95Ms: round(histogramQuantile(buckets, 0.95)),
    p99Ms: round(histogramQuantile(buckets, 0.99)),
    sampleCount: buckets.reduce((a, b) => a + b, 0),
  };
}

/** Adds attempt durations to the current minute's histogram of each endpoint: one statement. */
export async function recordLatencies(
  sql: Sql,
  samples: { endpointId: string; durationMs: number }[],
): Promise<void> {
  if (samples.length === 0) return;
  const byEndpoint = new Map<string, number[]>();
  for (const s of samples) {
    let buckets = byEndpoint.get(s.endpointId);
    if (!buckets) {
      buckets = new Array(BUCKET_COUNT).fill(0);
      byEndpoint.set(s.endpointId, buckets);
    }
    buckets[bucketIndex(s.durationMs)]!++;
  }
  const ids = [...byEndpoint.keys()];
  const literals = ids.map((id) => `{${byEndpoint.get(id)!.join(',')}}`);
  await sql`
    INSERT INTO endpoint_latency_minutes AS cur (endpoint_id, minute, buckets)
    SELECT id, date_trunc('minute', now()), b::int[] FROM unnest(${ids}::text[], ${literals}::text[]) AS t(id, b)
    ON CONFLICT (endpoint_id, minute) DO UPDATE SET buckets = (
      SELECT array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY ord)
      FROM unnest(cur.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(x, y, ord))`;
}

/** Summed 24 h histograms for the given endpoints (all endpoints with samples when omitted). */
export async function latencyWindow(sql: Sql, endpointIds?: string[]): Promise<Map<string, LatencySummary>> {
  const rows = await sql<{ endpoint_id: string; buckets: number[] }[]>`
    SELECT endpoint_id, array_agg(total ORDER BY ord) AS buckets FROM (
      SELECT endpoint_id, ord, sum(x)::int AS total
      FROM endpoint_latency_minutes, unnest(buckets) WITH ORDINALITY AS u(x, ord)
      WHERE minute > now() - interval '24 hours'
        ${endpointIds ? sql`AND endpoint_id = ANY(${endpointIds}::text[])` : sql``}
      GROUP BY endpoint_id, ord
    ) s GROUP BY endpoint_id`;
  return new Map(rows.map((r) => [r.endpoint_id, summarize(r.buckets)]));
}

/** Copies current percentiles into endpoint_health (read by the breaker and the metrics). */
export async function refreshHealthPercentiles(sql: Sql): Promise<void> {
  const summaries = await latencyWindow(sql);
  if (summaries.size === 0) return;
  const ids = [...summaries.keys()];
  const get = (f: keyof LatencySummary) => ids.map((id) => summaries.get(id)![f]);
  await sql`
    UPDATE endpoint_health h SET p50_ms = t.p50, p95_ms = t.p95, p99_ms = t.p99, sample_count = t.n
    FROM unnest(${ids}::text[], ${get('p50Ms')}::int[], ${get('p95Ms')}::int[], ${get('p99Ms')}::int[],
                ${get('sampleCount')}::int[]) AS t(id, p50, p95, p99, n)
    WHERE h.endpoint_id = t.id`;
  // Minutes older than the window are never read again.
  await sql`DELETE FROM endpoint_latency_minutes WHERE minute < now() - interval '25 hours'`;
}
