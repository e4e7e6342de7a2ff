/**
 * Resend: an endpoint's deliveries created in a time range are sent again whatever their state,
 * delivered ones included, with the same `webhook-id` (the existing delivery row is requeued, as
 * a replay does), paced like a bulk replay and audited with the caller's reason. A delivery still
 * queued or in flight is skipped (it is going to be sent anyway; requeueing it would reset its
 * retry budget and could send it twice at once), and so is one whose payload has been erased.
 * planResend() fixes the matched set and writes the audit; runResend() works through it in
 * batches, one short transaction each, like runReplay() (deliveries/bulk-replay.ts).
 */
import type { Executor, Sql } from '../db/connect.js';
import { ID_TIME_SLACK_MS, idAt } from '../ids.js';
import { shownStatus } from '../queue/read-state.js';
import type { Actor } from '../tenants/audit.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';
import { type ReplayPace, requeueInPacedBatches } from './paced-requeue.js';
import { insertAuditWithinLimit, type PacedRunLimit } from './paced-run-limit.js';
import type { DeliveryStatus } from './read.js';
import { ReplayError } from './replay.js';

/** The caller's tenant scope (tenantId null: every tenant; the endpoint id names one) and the range. */
export interface ResendFilter extends TenantScope {
  endpointId: string;
  /** ISO 8601; bounds when the delivery was created (accepted): since inclusive, until exclusive. */
  since: string;
  until?: string | undefined;
  /** Exact names, or prefixes written `order.*` as in an endpoint's subscription. */
  eventTypes?: string[] | undefined;
  statuses?: DeliveryStatus[] | undefined;
  /** At most this many, oldest first. */
  limit?: number | undefined;
}

export interface ResendPlan {
  auditId: string;
  dryRun: boolean;
  matched: number;
  /** Matched deliveries still queued or in flight at planning: left alone. */
  queued: number;
  /** Matched deliveries whose payload was erased: nothing to send. */
  payloadExpired: number;
  /** The last matched delivery id (ids are time-ordered); null when nothing matched. */
  boundary: string | null;
}

export interface ResendProgress {
  matched: number;
  resent: number;
  skipped: number;
}

/** `order.*` → a LIKE pattern `order.%` (LIKE's own wildcards escaped). */
function prefixPattern(entry: string): string {
  return `${entry.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The matched set. Delivery ids come from the database clock a moment after the row's
 * created_at (same transaction), so `since` is also a lower bound on the id and the scan of the
 * endpoint index (endpoint_id, id) starts there rather than at the endpoint's first delivery;
 * `until` bounds the id with ID_TIME_SLACK_MS to spare for a long enqueue transaction.
 */
function matches(sql: Executor, filter: ResendFilter) {
  const exact = filter.eventTypes?.filter((t) => !t.endsWith('.*')) ?? [];
  const prefixes = filter.eventTypes?.filter((t) => t.endsWith('.*')).map(prefixPattern) ?? [];
  const untilMs = filter.until === undefined ? undefined : Date.parse(filter.until);
  return sql`
    d.endpoint_id = ${filter.endpointId} AND ${tenantIs(sql, filter, 'e.tenant_id')}
    AND d.id >= ${idAt('dlv_', Date.parse(filter.since))} AND d.created_at >= ${filter.since}::text::timestamptz
    ${
      untilMs === undefined
        ? sql``
        : sql`AND d.id < ${idAt('dlv_', untilMs + ID_TIME_SLACK_MS)} AND d.created_at < ${filter.until!}::text::timestamptz`
    }
    ${
      filter.eventTypes === undefined
        ? sql``
        : sql`AND (m.event_type = ANY(${exact}::text[]) OR m.event_type LIKE ANY(${prefixes}::text[]))`
    }
    ${
      filter.statuses === undefined ? sql`` : sql`AND ${shownStatus(sql)} = ANY(${filter.statuses}::text[])`
    }`;
}

/** The filter as stored in the audit row (the API's field names). */
function auditFilter(filter: ResendFilter, reason: string | undefined): Record<string, unknown> {
  const stored: Record<string, unknown> = {
    kind: 'resend',
    tenant_id: filter.tenantId ?? undefined,
    endpoint_id: filter.endpointId,
    since: filter.since,
    until: filter.until,
    event_types: filter.eventTypes,
    statuses: filter.statuses,
    limit: filter.limit,
    reason,
  };
  for (const key of Object.keys(stored)) if (stored[key] === undefined) delete stored[key];
  return stored;
}

/**
 * Checks the endpoint in the caller's scope (unknown, deleted and other tenants' ids are
 * `endpoint_not_found`; a disabled one is `endpoint_unavailable` unless this is a dry run: its
 * deliveries could not be sent), counts the matched set up to `limit`, remembers its last id and
 * writes the audit rows (finished at once for a dry run or an empty set).
 */
export async function planResend(
  sql: Sql,
  filter: ResendFilter,
  options: {
    actor: Actor;
    dryRun: boolean;
    reason?: string | undefined;
    runLimit?: PacedRunLimit | undefined;
    /** The request's trace (tracing on): the resend's attempts continue it, linked to their original. */
    traceparent?: string | null | undefined;
  },
): Promise<ResendPlan> {
  const [endpoint] = await sql<{ enabled: boolean; tenant_id: string }[]>`
    SELECT e.enabled, e.tenant_id FROM endpoints e
    WHERE e.id = ${filter.endpointId} AND e.deleted_at IS NULL AND ${tenantIs(sql, filter, 'e.tenant_id')}`;
  if (!endpoint) throw new ReplayError('endpoint_not_found', `endpoint ${filter.endpointId} not found`);
  if (!endpoint.enabled && !options.dryRun) {
    throw new ReplayError(
      'endpoint_unavailable',
      `endpoint ${filter.endpointId} is disabled: enable it (PATCH /v1/endpoints/{id} {"enabled": true}) and resend again`,
    );
  }
  const [counts] = await sql<{ matched: number; queued: number; expired: number; boundary: string | null }[]>`
    SELECT count(*)::int AS matched, (count(*) FILTER (WHERE s.queued))::int AS queued,
      (count(*) FILTER (WHERE s.expired AND NOT s.queued))::int AS expired, max(s.id) AS boundary
    FROM (
      SELECT d.id, q.delivery_id IS NOT NULL AS queued, m.payload_expired_at IS NOT NULL AS expired
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id JOIN messages m ON m.id = d.message_id
      LEFT JOIN delivery_queue q ON q.delivery_id = d.id
      WHERE ${matches(sql, filter)}
      ORDER BY d.id
      LIMIT ${filter.limit ?? null}
    ) s`;
  const matched = counts?.matched ?? 0;
  const finishedNow = options.dryRun || matched === 0;
  const auditId = await insertAuditWithinLimit(
    sql,
    {
      actor: options.actor,
      // The endpoint's tenant, also when an admin asks: the tenant's own keys see the resend.
      tenantId: endpoint.tenant_id,
      filter: auditFilter(filter, options.reason),
      dryRun: options.dryRun,
      matched,
      replayed: 0,
      skipped: options.dryRun ? (counts?.queued ?? 0) + (counts?.expired ?? 0) : 0,
      state: finishedNow ? 'finished' : 'running',
      reason: options.reason,
      traceparent: options.traceparent,
    },
    options.runLimit,
  );
  return {
    auditId,
    dryRun: options.dryRun,
    matched,
    queued: counts?.queued ?? 0,
    payloadExpired: counts?.expired ?? 0,
    boundary: matched === 0 ? null : (counts?.boundary ?? null),
  };
}

interface CandidateRow {
  id: string;
  queued: boolean;
}

/**
 * Requeues the planned set batch by batch (paced-requeue.ts: lock the rows, requeue those with no
 * queue row and a payload, advance the audit row, notify; one transaction), no faster than
 * `ratePerSecond` on average, the deliveries within a batch spaced 1/rate apart. A crash loses at
 * most the batch in progress; the rest was simply not resent. Stops between batches when
 * `signal` aborts.
 */
export async function runResend(
  sql: Sql,
  plan: ResendPlan,
  filter: ResendFilter,
  pace: ReplayPace,
): Promise<ResendProgress & { state: 'finished' | 'interrupted' }> {
  if (plan.dryRun || plan.boundary === null) {
    const skipped = plan.dryRun ? plan.queued + plan.payloadExpired : 0;
    return { matched: plan.matched, resent: 0, skipped, state: 'finished' };
  }
  const boundary = plan.boundary;
  const outcome = await requeueInPacedBatches(sql, plan, pace, '', async (tx, cursor, limit) => {
    // FOR UPDATE OF d: a concurrent replay of the same delivery waits for this batch, then
    // sees its queue row and refuses, so nothing is queued twice.
    const rows = await tx<CandidateRow[]>`
      SELECT d.id, q.delivery_id IS NOT NULL AS queued
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id JOIN messages m ON m.id = d.message_id
      LEFT JOIN delivery_queue q ON q.delivery_id = d.id
      WHERE ${matches(tx, filter)} AND d.id > ${cursor} AND d.id <= ${boundary}
      ORDER BY d.id
      LIMIT ${limit}
      FOR UPDATE OF d`;
    // requeueLocked leaves out the ones whose payload was erased.
    return {
      read: rows.length,
      wanted: rows.filter((r) => !r.queued).map((r) => r.id),
      next: rows.at(-1)?.id ?? cursor,
    };
  });
  return {
    matched: outcome.matched,
    resent: outcome.replayed,
    skipped: outcome.skipped,
    state: outcome.state,
  };
}
