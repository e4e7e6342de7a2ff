/**
 * Bulk replay of dead letters, paced so that a partner that has just recovered is not flooded:
 * the matched deliveries are requeued in batches of `batchSize`, each batch one short
 * transaction, released no faster than `ratePerSecond` on average, and the deliveries within a
 * batch get next_attempt_at spaced 1/rate apart. Releasing batch by batch (rather than queueing
 * everything at once with spaced times) matters because an opening circuit breaker parks an
 * endpoint's whole queue and a closing one releases it all at once: only what was already
 * released can bunch up that way, which is at most one batch. Why: docs/architecture.md ("Replay").
 *
 * planReplay() fixes the matched set and writes the audit row; runReplay() works through it.
 * The API and `hookpost replay` both use them.
 */
import type { Executor, Sql } from '../db/connect.js';
import type { Actor } from '../tenants/audit.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';
import { type ReplayOutcome, type ReplayPace, requeueInPacedBatches } from './paced-requeue.js';
import { insertAuditWithinLimit, type PacedRunLimit } from './paced-run-limit.js';
import { ReplayError } from './replay.js';

/** The largest `limit` accepted (without a limit a replay takes every match). */
export const MAX_REPLAY_LIMIT = 1_000_000;

/** Which dead letters to replay; times are ISO 8601 and bound `dead_at` (when they died). */
/**
 * The tenant the replay is confined to (the caller's scope, narrowed by the request; tenantId
 * null: all) and which dead letters.
 */
export interface ReplayFilter extends TenantScope {
  endpointId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  errorClass?: string | undefined;
  statusCode?: number | undefined;
  /** At most this many, oldest dead letters first. */
  limit?: number | undefined;
}

export interface ReplayPlan {
  auditId: string;
  dryRun: boolean;
  matched: number;
  /** Matched deliveries whose endpoint is disabled or deleted: never requeued. */
  unavailable: number;
  /** The last matched row in (dead_at, id) order; null when nothing matched. */
  boundary: { deadAt: string; id: string } | null;
  /** Dead letters newer than this (the moment of planning) are not part of this replay. */
  asOf: string;
}

/**
 * The matched set: dead letters by the filter that had died by `asOf`, within the tenant scope
 * (a condition on `deliveries d` and its endpoint `e`).
 */
export function matches(sql: Executor, filter: ReplayFilter, asOf: string) {
  return sql`
    d.status = 'dead_letter' AND d.dead_at <= ${asOf}::text::timestamptz
    AND ${tenantIs(sql, filter, 'e.tenant_id')}
    ${filter.since === undefined ? sql`` : sql`AND d.dead_at >= ${filter.since}::text::timestamptz`}
    ${filter.until === undefined ? sql`` : sql`AND d.dead_at <= ${filter.until}::text::timestamptz`}
    ${filter.endpointId === undefined ? sql`` : sql`AND d.endpoint_id = ${filter.endpointId}`}
    ${filter.errorClass === undefined ? sql`` : sql`AND d.last_error_class = ${filter.errorClass}`}
    ${filter.statusCode === undefined ? sql`` : sql`AND d.last_status_code = ${filter.statusCode}`}`;
}

/** The filter as it is stored in the audit row (the API's field names). */
function auditFilter(filter: ReplayFilter, asOf: string): Record<string, unknown> {
  const stored: Record<string, unknown> = {
    tenant_id: filter.tenantId ?? undefined,
    endpoint_id: filter.endpointId,
    since: filter.since,
    until: filter.until,
    error_class: filter.errorClass,
    status_code: filter.statusCode,
    limit: filter.limit,
  };
  for (const key of Object.keys(stored)) if (stored[key] === undefined) delete stored[key];
  return { ...stored, as_of: asOf };
}

interface PlanRow {
  dead_at: string;
  id: string;
  matched: number;
  unavailable: number;
}

/**
 * Counts what the filter matches (up to `limit`, oldest first) and remembers the last matched
 * row, so the batches work through exactly this set even while new dead letters arrive. Writes
 * the audit row: finished at once for a dry run (nothing else changes), `running` otherwise.
 * Timestamps travel as ISO text both ways (to_json out, `::text::timestamptz` in): postgres.js
 * turns a timestamptz parameter into a JS Date, which would cut PostgreSQL's microseconds, shift
 * the boundary and refuse '-infinity'.
 */
export async function planReplay(
  sql: Sql,
  filter: ReplayFilter,
  options: {
    actor: Actor;
    dryRun: boolean;
    runLimit?: PacedRunLimit | undefined;
    traceparent?: string | null | undefined;
  },
): Promise<ReplayPlan> {
  const [clock] = await sql<{ as_of: string }[]>`SELECT to_json(now()) #>> '{}' AS as_of`;
  const asOf = clock!.as_of;
  const [last] = await sql<PlanRow[]>`
    SELECT to_json(m.dead_at) #>> '{}' AS dead_at, m.id,
      count(*) OVER ()::int AS matched,
      (count(*) FILTER (WHERE NOT m.available) OVER ())::int AS unavailable
    FROM (
      SELECT d.dead_at, d.id, e.enabled AND e.deleted_at IS NULL AS available
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
      WHERE ${matches(sql, filter, asOf)}
      ORDER BY d.dead_at, d.id
      LIMIT ${filter.limit ?? null}
    ) m
    ORDER BY m.dead_at DESC, m.id DESC
    LIMIT 1`;
  const matched = last?.matched ?? 0;
  const unavailable = last?.unavailable ?? 0;
  const finishedNow = options.dryRun || matched === 0;
  const auditId = await insertAuditWithinLimit(
    sql,
    {
      actor: options.actor,
      tenantId: filter.tenantId,
      filter: auditFilter(filter, asOf),
      dryRun: options.dryRun,
      matched,
      replayed: 0,
      skipped: finishedNow ? (options.dryRun ? unavailable : 0) : 0,
      state: finishedNow ? 'finished' : 'running',
      traceparent: options.traceparent,
    },
    options.runLimit,
  );
  return {
    auditId,
    dryRun: options.dryRun,
    matched,
    unavailable,
    boundary: last ? { deadAt: last.dead_at, id: last.id } : null,
    asOf,
  };
}

interface CandidateRow {
  id: string;
  dead_at: string;
  available: boolean;
}

/**
 * Requeues the planned set batch by batch (paced-requeue.ts): each batch locks its rows and
 * requeues those whose endpoint is available, in one transaction, so a crash loses at most the
 * batch in progress, which then simply stays dead. Rows that stopped being dead letters since
 * planning (replayed by someone else) are left alone. Stops between batches when `signal` aborts
 * (state `interrupted`).
 */
export async function runReplay(
  sql: Sql,
  plan: ReplayPlan,
  filter: ReplayFilter,
  pace: ReplayPace,
): Promise<ReplayOutcome> {
  if (plan.dryRun || !plan.boundary) {
    const skipped = plan.dryRun ? plan.unavailable : 0;
    return { matched: plan.matched, replayed: 0, skipped, state: 'finished' };
  }
  const boundary = plan.boundary;
  return requeueInPacedBatches(
    sql,
    plan,
    pace,
    { deadAt: '-infinity', id: '' },
    async (tx, cursor, limit) => {
      const rows = await tx<CandidateRow[]>`
        SELECT d.id, to_json(d.dead_at) #>> '{}' AS dead_at, e.enabled AND e.deleted_at IS NULL AS available
        FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
        WHERE ${matches(tx, filter, plan.asOf)}
          AND (d.dead_at, d.id) > (${cursor.deadAt}::text::timestamptz, ${cursor.id})
          AND (d.dead_at, d.id) <= (${boundary.deadAt}::text::timestamptz, ${boundary.id})
        ORDER BY d.dead_at, d.id
        LIMIT ${limit}
        FOR UPDATE OF d`;
      const last = rows.at(-1);
      return {
        read: rows.length,
        wanted: rows.filter((r) => r.available).map((r) => r.id),
        next: last ? { deadAt: last.dead_at, id: last.id } : cursor,
      };
    },
  );
}

/**
 * The start of every bulk replay, from the API or `hookpost replay`: checks the named endpoint
 * in the caller's scope (unknown and other tenants' ids are `endpoint_not_found`), refuses a
 * disabled one when asked to (the CLI, which would otherwise wait on deliveries that cannot be
 * sent), then plans the replay and writes its audit rows. Working through the plan is
 * runReplay()'s job, paced as the caller chooses.
 */
export async function startReplay(
  sql: Sql,
  filter: ReplayFilter,
  options: {
    actor: Actor;
    dryRun: boolean;
    refuseDisabledEndpoint?: boolean;
    /** A tenant's live runs at once (the API's callers; the operator's CLI has none). */
    runLimit?: PacedRunLimit | undefined;
    /** The request's trace (tracing on): the replay's attempts continue it, linked to their original. */
    traceparent?: string | null | undefined;
  },
): Promise<ReplayPlan> {
  if (filter.endpointId !== undefined) {
    const [endpoint] = await sql<{ enabled: boolean }[]>`
      SELECT e.enabled FROM endpoints e
      WHERE e.id = ${filter.endpointId} AND e.deleted_at IS NULL AND ${tenantIs(sql, filter, 'e.tenant_id')}`;
    if (!endpoint) throw new ReplayError('endpoint_not_found', `endpoint ${filter.endpointId} not found`);
    if (!endpoint.enabled && options.refuseDisabledEndpoint && !options.dryRun) {
      throw new ReplayError(
        'endpoint_unavailable',
        `endpoint ${filter.endpointId} is disabled: its deliveries cannot be sent; enable it ` +
          '(PATCH /v1/endpoints/{id} {"enabled": true}) and run this again',
      );
    }
  }
  return planReplay(sql, filter, options);
}
