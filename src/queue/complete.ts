/**
 * Transition complete: a batch of attempt results written in one statement (settled rows leave
 * the queue, retried ones wait again), never inside a transaction that spans an HTTP call. Why it
 * is shaped the way it is: docs/architecture.md ("Dispatch path", "Queue states").
 */
import type { Executor, Sql } from '../db/connect.js';
import { DEFAULT_OPS_EVENTS_PER_MINUTE, deadLetterEventCtes, deadLetterRows } from '../ops-events/events.js';
import { settledKeys, unholdHeads } from './ordering.js';
import { returnFate, returnState } from './states.js';

/** PostgreSQL type oid of boolean, for postgres.js array parameters (it sends a JS boolean[] untyped). */
const BOOL = 16;

export interface CompletedAttempt {
  deliveryId: string;
  endpointId: string;
  leaseToken: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: 'success' | 'retryable' | 'permanent';
  errorClass: string | null;
  error: string | null;
  snippet: string | null;
  /** The delivery's new status and, for `failed`, how long until the next attempt. */
  status: 'delivered' | 'failed' | 'dead_letter';
  delayMs: number;
  /**
   * Whether the attempt counts against max_attempts (retry-policy.ts isCharged); unset counts as
   * true. An uncharged one gives back the claim's increment: the next attempt has its number.
   */
  charged?: boolean;
  /** The delivery has an ordering key: the batch settles and releases its keys in one transaction. */
  keyed?: boolean;
  /**
   * Its endpoint has a max_in_flight, which counts the endpoint's leased queue rows: the slot
   * this attempt held is free for the next claim only once the result is written.
   */
  freesSlot?: boolean;
  /**
   * Whether the reaper may have taken this claim back before the result is written (its lease is
   * near or past its end; lease.ts). Only then are the two late-success lookups below run; unset
   * counts as true.
   */
  mayBeLate?: boolean;
}

/**
 * Writes a batch of attempt results in one statement: appends every attempt to the log, then,
 * for results whose lease still holds, deletes the queue row (settled) or returns it to the
 * queue (retry: due after its delay, parked if its endpoint was disabled or its circuit opened
 * meanwhile, cancelled if its endpoint was deleted), and records the outcome on the delivery (a
 * HOT update). A late finisher whose lease was taken over matches no queue row and changes
 * nothing, with one exception: a success whose row nobody holds (the reaper took it back while
 * the database was unreachable and the result could not be written) still counts, since the
 * partner has it; the reaper's verdict was only a guess. A dead letter enqueues its operational
 * event in the same statement (at most `opsEventsPerMinute` per endpoint a minute). `alongside`
 * runs in the same transaction, after the write. Returns the ids whose result took effect.
 */
export async function completeAttempts(
  sql: Executor,
  results: CompletedAttempt[],
  opsEventsPerMinute = DEFAULT_OPS_EVENTS_PER_MINUTE,
  alongside?: WrittenAlongside,
): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  // A batch with keyed deliveries writes its results and releases their keys' next deliveries in
  // one transaction (one commit, no gap for a crash), as does one with work to commit beside it;
  // any other batch stays a lone statement.
  const write = async (tx: Executor) => {
    const applied = await settle(tx, results, opsEventsPerMinute);
    await alongside?.(
      tx,
      results.filter((r) => applied.has(r.deliveryId)),
    );
    return applied;
  };
  // Already inside a transaction (no begin): both run in it.
  return 'begin' in sql && (alongside || results.some((r) => r.keyed))
    ? (sql as Sql).begin(write)
    : write(sql);
}

/** Work committed with a batch's results, given those that took effect. */
export type WrittenAlongside = (tx: Executor, applied: CompletedAttempt[]) => Promise<void>;

async function settle(
  sql: Executor,
  results: CompletedAttempt[],
  opsEventsPerMinute: number,
): Promise<Set<string>> {
  const col = <K extends keyof CompletedAttempt>(key: K) => results.map((r) => r[key]);
  // What the deliveries update needs of a result, returned by each branch that takes it (owned).
  const outcome = sql`r.fate, r.status, r.counted, r.status_code, r.error_class, r.error, r.duration_ms`;
  const rows = await sql<{ id: string; key_endpoint_id: string | null; ordering_key: string | null }[]>`
    WITH r AS (
      SELECT t.*,
        -- only rows that go back to the queue need their endpoint's state (two key lookups). A
        -- failed attempt is never the probe's exemption: a half-open circuit's probe that failed
        -- parks (its failure re-opens the circuit just after this write); left due, it could be
        -- claimed again before the breaker sees the failure, a second probe.
        CASE WHEN t.status = 'failed' THEN ${returnFate(sql, sql`t.endpoint_id`, sql`NULL::text`)} END AS fate,
        -- the attempts that count: an uncharged one (shutdown, nothing sent) gives back the claim's
        -- increment
        t.attempt - CASE WHEN t.charged THEN 0 ELSE 1 END AS counted
      FROM unnest(
        ${col('deliveryId')}::text[], ${col('endpointId')}::text[], ${col('leaseToken')}::uuid[],
        ${col('attempt')}::int[], ${results.map((r) => r.startedAt.toISOString())}::timestamptz[],
        ${col('durationMs')}::int[], ${col('statusCode')}::int[], ${col('outcome')}::text[],
        ${col('errorClass')}::text[], ${col('error')}::text[], ${col('snippet')}::text[],
        ${col('status')}::text[], ${col('delayMs')}::float8[], ${sql.array(
          results.map((r) => r.mayBeLate !== false),
          BOOL,
        )}::bool[], ${sql.array(
          results.map((r) => r.charged !== false),
          BOOL,
        )}::bool[]
      ) AS t(delivery_id, endpoint_id, lease_token, attempt, started_at, duration_ms, status_code, outcome,
             error_class, error, snippet, status, delay_ms, may_be_late, charged)
    ),
    -- A row marked cancelling (its message expunged while in flight) leaves the queue whatever
    -- the result. The mark is read from the row this statement locks, so one written after this
    -- statement's snapshot is still seen (the expunge waits for this write, or this for it).
    settled AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token
        AND (r.status <> 'failed' OR r.fate = 'cancel' OR q.state = 'cancelling')
      RETURNING q.delivery_id, q.endpoint_id, q.ordering_key, q.state = 'cancelling' AS erased, ${outcome}
    ),
    retried AS (
      UPDATE delivery_queue q SET
        state = ${returnState(sql, sql`r.fate`)}, lease_token = NULL, lease_expires_at = NULL,
        next_attempt_at = now() + r.delay_ms * interval '1 millisecond', attempt_count = r.counted
      FROM r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.status = 'failed'
        AND r.fate <> 'cancel' AND q.state = 'leased'
      RETURNING q.delivery_id, NULL::text AS endpoint_id, NULL::text AS ordering_key, false AS erased, ${outcome}
    ),
    -- Late successes on rows nobody holds: requeued by the reaper and not claimed since (same
    -- attempt count, no lease), or dead-lettered by it as lease_expired (no queue row left).
    -- Looked up only for results written near or past their lease's end (may_be_late): a result
    -- well inside its lease cannot have been taken back.
    rescued_waiting AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND r.status = 'delivered' AND r.may_be_late
        AND q.lease_token IS DISTINCT FROM r.lease_token
        AND q.lease_expires_at IS NULL AND q.attempt_count = r.attempt
      RETURNING q.delivery_id, q.endpoint_id, q.ordering_key, false AS erased, ${outcome}
    ),
    rescued_dead AS (
      SELECT d.id AS delivery_id, NULL::text AS endpoint_id, NULL::text AS ordering_key,
        EXISTS (SELECT 1 FROM messages m WHERE m.id = d.message_id AND m.payload_expired_at IS NOT NULL) AS erased,
        ${outcome}
      FROM deliveries d JOIN r ON r.delivery_id = d.id
      WHERE r.status = 'delivered' AND r.may_be_late
        AND d.status = 'dead_letter' AND d.last_error_class = 'lease_expired'
        AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.delivery_id = d.id)
    ),
    -- settled keyed rows name their key: its next delivery is released below (ordering.ts).
    -- Each branch carries its result's columns, so the update below joins deliveries by primary
    -- key alone: joining r again was planned as a nested loop over both (the planner cannot see
    -- an unnest's length), quadratic in the batch size.
    owned AS (
      SELECT x.*,
        -- an erased message's delivery that was not delivered ends cancelled, like its waiting ones
        CASE WHEN x.fate = 'cancel' OR (x.erased AND x.status <> 'delivered') THEN 'cancelled' ELSE x.status END
          AS final_status
      FROM (SELECT * FROM settled UNION ALL SELECT * FROM retried
            UNION ALL SELECT * FROM rescued_waiting UNION ALL SELECT * FROM rescued_dead) x
    ),
    -- Every attempt is logged; its response snippet only where the result took effect on a row
    -- whose message was not erased meanwhile (a late finisher's snippet is not kept either). A
    -- hashed subplan over the batch's ids, not a join: see owned.
    logged AS (
      INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code,
                                     outcome, error_class, error, response_snippet)
      SELECT delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error,
        CASE WHEN snippet IS NOT NULL AND delivery_id IN (SELECT o.delivery_id FROM owned o WHERE NOT o.erased)
          THEN snippet END
      FROM r
    ),
    done AS (
    UPDATE deliveries d SET
      status = o.final_status,
      attempt_count = o.counted,
      last_status_code = o.status_code,
      last_error_class = o.error_class,
      last_error = o.error,
      last_duration_ms = o.duration_ms,
      delivered_at = CASE WHEN o.status = 'delivered' THEN now() ELSE d.delivered_at END,
      -- NULL stays NULL on the hot path (HOT update); only a rescued dead letter loses its dead_at
      dead_at = CASE WHEN o.final_status = 'dead_letter' THEN now() WHEN o.status = 'delivered' THEN NULL ELSE d.dead_at END,
      updated_at = now()
    FROM owned o
    WHERE d.id = o.delivery_id
    RETURNING d.id, d.status, d.endpoint_id, d.message_id, d.attempt_count, d.last_status_code, d.last_error_class,
      o.endpoint_id AS key_endpoint_id, o.ordering_key
    ),
    -- delivery.dead_lettered to the operators, capped per endpoint-minute (ops-events/events.ts)
    ${deadLetterEventCtes(sql, 'dl', deadLetterRows(sql, sql`done`), opsEventsPerMinute)}
    SELECT id, key_endpoint_id, ordering_key FROM done`;
  // Release the next delivery of each settled key: in this transaction when there is one (the
  // lock is taken after the settle, so a racing enqueue's rows are seen), else in a short one of
  // its own, where a crash in between is caught by the maintenance safety net.
  await unholdHeads(sql, settledKeys(rows));
  return new Set(rows.map((r) => r.id));
}
