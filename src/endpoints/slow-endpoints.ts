/**
 * The 24 h latency windows behind GET /v1/endpoints/slow, bounded per call: a tenant-bound key
 * sums only its own tenant's endpoints (the tenant condition is in the statement, which reads the
 * tenant's endpoints and then their minutes by primary key), and the all-tenant view is summed at
 * most once per LATENCY_WINDOW_CACHE_MS per process, however many callers ask.
 */
import type { Sql } from '../db/connect.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';
import { type LatencySummary, latencyWindow, summarize } from './latency.js';

/** How long the all-tenant window serves callers: the dispatchers refresh percentiles as often. */
export const LATENCY_WINDOW_CACHE_MS = 30_000;

/** The statement behind tenantLatencyWindow(), not yet run (the test EXPLAINs it). */
export function tenantLatencyWindowQuery(sql: Sql, scope: TenantScope) {
  return sql<{ endpoint_id: string; buckets: number[] }[]>`
    SELECT endpoint_id, array_agg(total ORDER BY ord) AS buckets FROM (
      SELECT l.endpoint_id, ord, sum(x)::int AS total
      FROM endpoints e
      JOIN endpoint_latency_minutes l ON l.endpoint_id = e.id AND l.minute > now() - interval '24 hours',
        unnest(l.buckets) WITH ORDINALITY AS u(x, ord)
      WHERE e.deleted_at IS NULL AND ${tenantIs(sql, scope, 'e.tenant_id')}
      GROUP BY l.endpoint_id, ord
    ) s GROUP BY endpoint_id`;
}

/** Summed 24 h histograms of the live endpoints in `scope`, and of no other. */
export async function tenantLatencyWindow(
  sql: Sql,
  scope: TenantScope,
): Promise<Map<string, LatencySummary>> {
  const rows = await tenantLatencyWindowQuery(sql, scope);
  return new Map(rows.map((r) => [r.endpoint_id, summarize(r.buckets)]));
}

/**
 * The all-tenant window (admin keys, unbound service keys), shared: callers within
 * LATENCY_WINDOW_CACHE_MS of the statement that summed it get its result, and callers while it
 * runs wait for that same statement instead of starting their own. A failed statement is
 * forgotten at once, so the next caller tries again.
 */
export class AllEndpointsLatencyWindow {
  private cached: { at: number; window: Promise<Map<string, LatencySummary>> } | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly maxAgeMs = LATENCY_WINDOW_CACHE_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  get(): Promise<Map<string, LatencySummary>> {
    const now = this.clock();
    if (this.cached && now - this.cached.at < this.maxAgeMs) return this.cached.window;
    const window = latencyWindow(this.sql);
    const entry = { at: now, window };
    this.cached = entry;
    window.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return window;
  }
}

/** The window a caller in `scope` may see: its tenant's own, or the shared all-tenant one. */
export function latencyWindowFor(
  sql: Sql,
  all: AllEndpointsLatencyWindow,
  scope: TenantScope,
): Promise<Map<string, LatencySummary>> {
  return scope.tenantId === null ? all.get() : tenantLatencyWindow(sql, scope);
}
