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
import { opsEventCtes } from '../ops-events/events.js';
import type { Actor } from '../tenants/audit.js';
import { tenantIs } from '../tenants/scope.js';
import { insertAudit, notifyOnCommit, ReplayError, requeueLocked } from './replay.js';

/** The largest `limit` accepted (without a limit a replay takes every match). */
export const MAX_REPLAY_LIMIT = 1_000_000;

/** Which dead letters to replay; times are ISO 8601 and bound `dead_at` (when they died). */
export interface ReplayFilter {
  /** The tenant the replay is confined to (the caller's scope, narrowed by the request); null: all. */
  tenantId: string | null;
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

export interface ReplayProgress {
  matched: number;
  replayed: number;
  skipped: number;
}

export interface ReplayPace {
  batchSize: number;
  ratePerSecond: number;
  signal?: AbortSignal | undefined;
  /** Called after each committed batch. */
  onProgress?: ((progress: ReplayProgress) => void) | undefined;
}

export interface ReplayOutcome extends ReplayProgress {
  state: 'finished' | 'interrupted';
}

/** The matched set: dead letters by the filter that had died by `asOf`, within the tenant scope. */
function matches(sql: Executor, filter: ReplayFilter, asOf: string) {
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
  options: { actor: Actor; dryRun: boolean },
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
  const auditId = await insertAudit(sql, {
    actor: options.actor,
    tenantId: filter.tenantId,
    filter: auditFilter(filter, asOf),
    dryRun: options.dryRun,
    matched,
    replayed: 0,
    skipped: finishedNow ? (options.dryRun ? unavailable : 0) : 0,
    state: finishedNow ? 'finished' : 'running',
  });
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

/** Sleeps `ms`, waking early (and resolving) when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Requeues the planned set batch by batch. Each batch locks its rows, requeues those whose
 * endpoint is available, advances the audit row and notifies the dispatchers, all in one
 * transaction: a crash loses at most the batch in progress, which then simply stays dead. Rows
 * that stopped being dead letters since planning (replayed by someone else) are left alone.
 * Stops between batches when `signal` aborts (state `interrupted`).
 */
export async function runReplay(sql: Sql, plan: ReplayPlan, filter: ReplayFilter, pace: ReplayPace) {
  const spacingMs = 1000 / pace.ratePerSecond;
  const progress: ReplayProgress = { matched: plan.matched, replayed: 0, skipped: 0 };
  if (plan.dryRun || !plan.boundary) {
    return { ...progress, skipped: plan.dryRun ? plan.unavailable : 0, state: 'finished' } as ReplayOutcome;
  }
  const boundary = plan.boundary;
  let cursor = { deadAt: '-infinity', id: '' };
  const started = performance.now();
  try {
    for (;;) {
      if (pace.signal?.aborted) break;
      const batch = await sql.begin(async (tx) => {
        const rows = await tx<CandidateRow[]>`
          SELECT d.id, to_json(d.dead_at) #>> '{}' AS dead_at, e.enabled AND e.deleted_at IS NULL AS available
          FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
          WHERE ${matches(tx, filter, plan.asOf)}
            AND (d.dead_at, d.id) > (${cursor.deadAt}::text::timestamptz, ${cursor.id})
            AND (d.dead_at, d.id) <= (${boundary.deadAt}::text::timestamptz, ${boundary.id})
          ORDER BY d.dead_at, d.id
          LIMIT ${pace.batchSize}
          FOR UPDATE OF d`;
        const wanted = rows.filter((r) => r.available).map((r, i) => ({ id: r.id, delayMs: i * spacingMs }));
        const requeued = await requeueLocked(tx, wanted, plan.auditId);
        await tx`
          UPDATE replay_audit SET replayed = replayed + ${requeued.length},
            skipped = skipped + ${rows.length - requeued.length}, updated_at = now()
          WHERE id = ${plan.auditId}`;
        if (requeued.length > 0) await notifyOnCommit(tx);
        return { rows, requeued: requeued.length };
      });
      if (batch.rows.length === 0) break;
      cursor = { deadAt: batch.rows.at(-1)!.dead_at, id: batch.rows.at(-1)!.id };
      progress.replayed += batch.requeued;
      progress.skipped += batch.rows.length - batch.requeued;
      pace.onProgress?.({ ...progress });
      // The next batch starts when this one's last delivery falls due, so the rate holds on
      // average across batches, not just within one.
      await pause(started + progress.replayed * spacingMs - performance.now(), pace.signal);
    }
  } catch (error) {
    await finishAudit(sql, plan.auditId, 'failed').catch(() => {});
    throw error;
  }
  const state = pace.signal?.aborted ? 'interrupted' : 'finished';
  // Matched rows that no batch saw any more (replayed meanwhile by someone else) count as skipped.
  if (state === 'finished') progress.skipped = plan.matched - progress.replayed;
  await finishAudit(sql, plan.auditId, state, state === 'finished' ? progress.skipped : undefined);
  return { ...progress, state } as ReplayOutcome;
}

/**
 * Marks a replay's progress row finished, interrupted or failed (and fixes `skipped` when given);
 * a `finished` one enqueues `replay.finished` for the operators in the same statement
 * (ops-events/events.ts).
 */
export async function finishAudit(sql: Sql, auditId: string, state: string, skipped?: number): Promise<void> {
  await sql`
    WITH ended AS (
      UPDATE replay_audit SET state = ${state}, finished_at = now(), updated_at = now(),
        skipped = ${skipped === undefined ? sql`skipped` : sql`${skipped}`}
      WHERE id = ${auditId}
      RETURNING id, tenant_id, filter, state, matched, replayed, skipped
    ),
    ${opsEventCtes(
      sql,
      'ops',
      sql`SELECT 'replay.finished'::text AS type, tenant_id, filter ->> 'endpoint_id' AS endpoint_id,
            jsonb_build_object('replay_id', id, 'matched', matched, 'replayed', replayed, 'skipped', skipped,
                               'filter', filter) AS data
          FROM ended WHERE state = 'finished'`,
    )}
    SELECT 1`;
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
  options: { actor: Actor; dryRun: boolean; refuseDisabledEndpoint?: boolean },
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
