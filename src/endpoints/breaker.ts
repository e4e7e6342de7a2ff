/**
 * The circuit breaker, one per endpoint, its state in endpoint_health so every dispatcher process
 * sees the same one. closed → open after N consecutive failures; while open the endpoint's queued
 * deliveries are parked (not sent, not charged); after the cooldown exactly one probe is released
 * (half_open); a failed probe re-opens with the cooldown doubled up to the maximum, a success
 * closes the circuit and releases everything.
 */
import type { Executor } from '../db/connect.js';
import { opsEventCtes } from '../ops-events/events.js';
import { armProbes } from '../queue/probe.js';
import { park, sweepUnclaimable, unpark } from '../queue/states.js';
import { wakeDispatchersIfAny } from '../queue/wakeup.js';
import { type CircuitChange, disableEndpoints } from './lifecycle.js';

export interface BreakerPolicy {
  threshold: number;
  cooldownSeconds: number;
  maxCooldownSeconds: number;
  disableAfterSeconds: number;
}

/**
 * Endpoints whose p95 is above this trip after half the usual failures: each failure of a slow
 * endpoint holds an HTTP slot for seconds, so waiting for the full count wastes many
 * slot-seconds; half (never below 1) still needs several failures in a row, so one slow outlier
 * does not open the circuit. 5 s is the seed's "investigate now" level for p95.
 */
export const SLOW_P95_MS = 5000;

export interface OutcomeSummary {
  endpointId: string;
  hadSuccess: boolean;
  /** Failures after the last success in this batch (all of them when there was none). */
  trailingFailures: number;
  failures: number;
}

/**
 * Folds a batch of attempt outcomes (in completion order) into one summary per endpoint. Only
 * retryable failures count against the breaker: a 4xx proves the endpoint is up and answering.
 */
export function summarizeOutcomes(
  results: { endpointId: string; outcome: 'success' | 'retryable' | 'permanent' }[],
): OutcomeSummary[] {
  const byEndpoint = new Map<string, OutcomeSummary>();
  for (const r of results) {
    if (r.outcome === 'permanent') continue;
    let s = byEndpoint.get(r.endpointId);
    if (!s) {
      s = { endpointId: r.endpointId, hadSuccess: false, trailingFailures: 0, failures: 0 };
      byEndpoint.set(r.endpointId, s);
    }
    if (r.outcome === 'success') {
      s.hadSuccess = true;
      s.trailingFailures = 0;
    } else {
      s.failures++;
      s.trailingFailures++;
    }
  }
  return [...byEndpoint.values()];
}

/**
 * Applies a batch's outcomes to the breakers in one statement, and parks or releases the queued
 * deliveries of endpoints whose circuit just opened or closed. `failedDeliveryIds` tells whether
 * a half-open endpoint's probe failed.
 */
export async function applyOutcomes(
  sql: Executor,
  summaries: OutcomeSummary[],
  failedDeliveryIds: string[],
  policy: BreakerPolicy,
): Promise<CircuitChange[]> {
  if (summaries.length === 0) return [];
  const rows = await sql<{ endpoint_id: string; old_state: string; state: string }[]>`
    WITH a AS (
      SELECT * FROM unnest(${summaries.map((s) => s.endpointId)}::text[], ${summaries.map((s) => (s.hadSuccess ? 1 : 0))}::int[],
                           ${summaries.map((s) => s.trailingFailures)}::int[], ${summaries.map((s) => s.failures)}::int[])
        AS t(endpoint_id, success_flag, trailing_failures, failures)
    ),
    -- The circuits, locked in one order (two dispatchers' batches never wait on each other in a
    -- cycle) and read as locked: a count committed by another dispatcher while this statement
    -- waited is added to, not overwritten.
    locked AS (
      SELECT h.* FROM endpoint_health h WHERE h.endpoint_id IN (SELECT endpoint_id FROM a)
      ORDER BY h.endpoint_id FOR UPDATE
    ),
    calc AS (
      SELECT h.endpoint_id, h.state AS old_state, a.success_flag = 1 AS had_success, a.failures, a.trailing_failures,
        CASE WHEN a.success_flag = 1 THEN a.trailing_failures ELSE h.consecutive_failures + a.trailing_failures END AS consecutive,
        coalesce(h.probe_delivery_id = ANY(${failedDeliveryIds}::text[]), false) AS probe_failed,
        CASE WHEN h.p95_ms > ${SLOW_P95_MS} THEN greatest(1, ceil(${policy.threshold} / 2.0)::int)
             ELSE ${policy.threshold} END AS threshold
      FROM locked h JOIN a ON a.endpoint_id = h.endpoint_id
    ),
    decided AS (
      SELECT c.*, CASE
        WHEN c.old_state = 'half_open' AND c.probe_failed AND NOT c.had_success THEN 'open'
        WHEN c.consecutive >= c.threshold AND c.old_state <> 'open' AND (c.had_success OR c.old_state = 'closed') THEN 'open'
        WHEN c.had_success THEN 'closed'
        ELSE c.old_state END AS new_state
      FROM calc c
    ),
    changed AS (
      UPDATE endpoint_health h SET
        consecutive_failures = d.consecutive,
        state = d.new_state,
        opened_at = CASE WHEN d.new_state = 'open' AND d.old_state <> 'open' THEN now() ELSE h.opened_at END,
        cooldown_seconds = CASE
          WHEN d.new_state = 'closed' THEN NULL
          WHEN d.old_state = 'half_open' AND d.new_state = 'open'
            THEN LEAST(${policy.maxCooldownSeconds}, coalesce(h.cooldown_seconds, ${policy.cooldownSeconds}) * 2)
          WHEN d.old_state = 'closed' AND d.new_state = 'open' THEN ${policy.cooldownSeconds}
          ELSE h.cooldown_seconds END,
        probe_delivery_id = CASE WHEN d.new_state = 'half_open' THEN h.probe_delivery_id END,
        last_success_at = CASE WHEN d.had_success THEN now() ELSE h.last_success_at END,
        last_failure_at = CASE WHEN d.failures > 0 THEN now() ELSE h.last_failure_at END,
        failing_since = CASE WHEN d.consecutive = 0 THEN NULL
                             WHEN d.had_success OR h.failing_since IS NULL THEN now()
                             ELSE h.failing_since END,
        updated_at = now()
      FROM decided d WHERE h.endpoint_id = d.endpoint_id
      RETURNING h.endpoint_id, d.old_state, h.state
    ),
    -- Opening (from closed, or a failed probe re-opening) parks the waiting rows; closing unparks
    -- them. Both are the queue's transitions (src/queue/states.ts).
    parked AS (${park(sql, sql`SELECT endpoint_id FROM changed WHERE state = 'open' AND old_state <> 'open'`)}),
    unparked AS (${unpark(sql, sql`SELECT endpoint_id FROM changed WHERE state = 'closed' AND old_state <> 'closed'`)}),
    -- The operators hear of a circuit opening (from closed; a failed probe re-opening is not
    -- news) and closing, committed with the change (ops-events/events.ts).
    ${opsEventCtes(
      sql,
      'ops',
      sql`SELECT CASE WHEN state = 'open' THEN 'endpoint.circuit_opened' ELSE 'endpoint.circuit_closed' END AS type,
            NULL::text AS tenant_id, endpoint_id, jsonb_build_object('previous_state', old_state) AS data
          FROM changed
          WHERE (state = 'open' AND old_state = 'closed') OR (state = 'closed' AND old_state <> 'closed')`,
    )}
    SELECT endpoint_id, old_state, state, ${wakeDispatchersIfAny(sql, sql`unparked`)} AS woken
    FROM changed WHERE old_state <> state`;
  return rows.map((r) => ({ endpointId: r.endpoint_id, from: r.old_state, to: r.state }));
}

/**
 * Periodic work, safe to run in every dispatcher at once: releases exactly one probe for each
 * open circuit whose cooldown is over (or a half-open one whose probe went away), parks, unparks
 * or cancels rows left in a state their endpoint does not allow (the sweep), and disables
 * endpoints failing for longer than allowed. Returns the ids of endpoints that were just
 * disabled, and whether a row became due (a probe armed, a row unparked): only then is the claim
 * loop woken, not at every tick.
 */
export async function breakerTick(
  sql: Executor,
  policy: BreakerPolicy,
): Promise<{ disabled: string[]; madeDue: boolean }> {
  // The probe: the oldest waiting row becomes due (it may be parked), and only it is claimable
  // while the circuit is half-open (the claim checks probe_delivery_id). A half-open circuit whose
  // probe left the queue (delivered, dead-lettered, cancelled) gets a new one.
  const [probes] = await sql<{ armed: number }[]>`
    WITH due AS (
      SELECT h.endpoint_id FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id AND e.enabled
      WHERE (h.state = 'open' AND h.opened_at + make_interval(secs => h.cooldown_seconds) <= now())
         OR (h.state = 'half_open' AND NOT EXISTS (
               SELECT 1 FROM delivery_queue q WHERE q.delivery_id = h.probe_delivery_id))
      FOR UPDATE OF h SKIP LOCKED
    ),
    ${armProbes(sql, sql`due`)},
    opened AS (
      UPDATE endpoint_health h SET state = 'half_open', probe_delivery_id = p.delivery_id, updated_at = now()
      FROM probe p WHERE h.endpoint_id = p.endpoint_id
    )
    SELECT count(delivery_id)::int AS armed FROM probe`;
  const swept = await sweepUnclaimable(sql);
  const disabled = await disableEndpoints(
    sql,
    sql`
      SELECT h.endpoint_id AS id,
        'failing continuously since ' || to_char(h.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS reason
      FROM endpoint_health h
      WHERE h.failing_since < now() - make_interval(secs => ${policy.disableAfterSeconds})`,
  );
  return { disabled, madeDue: (probes?.armed ?? 0) > 0 || swept.unparked > 0 };
}
