/**
 * The dispatcher's queries after the claim (deliveries/claim.ts): complete, release, reap. Each runs as one statement per
 * batch, never inside a transaction that spans an HTTP call. Why each is shaped the way it is:
 * docs/architecture.md ("Dispatch path").
 */
import type { Executor, Fragment, Sql } from '../db/connect.js';
import { DEFAULT_OPS_EVENTS_PER_MINUTE, deadLetterEventCtes } from '../ops-events/events.js';
import { type OrderingKey, releaseHeads } from './ordering.js';
import { markCancelled, returnFate, waitUntil } from './queue-state.js';

/**
 * The dead letters among `settled` (a CTE of updated deliveries with id, status, endpoint_id,
 * message_id, attempt_count, last_status_code, last_error_class), shaped for deadLetterEventCtes.
 */
function deadLetterRows(sql: Executor, settled: Fragment): Fragment {
  return sql`
    SELECT x.id AS delivery_id, x.endpoint_id,
      jsonb_build_object('message_id', x.message_id, 'event_type', m.event_type, 'attempts', x.attempt_count,
                         'last_status_code', x.last_status_code, 'last_error_class', x.last_error_class) AS data
    FROM ${settled} x JOIN messages m ON m.id = x.message_id
    WHERE x.status = 'dead_letter'`;
}

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
  /** The delivery has an ordering key: the batch settles and releases its keys in one transaction. */
  keyed?: boolean;
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
 * event in the same statement (at most `opsEventsPerMinute` per endpoint a minute). Returns the
 * ids whose result took effect.
 */
export async function completeAttempts(
  sql: Executor,
  results: CompletedAttempt[],
  opsEventsPerMinute = DEFAULT_OPS_EVENTS_PER_MINUTE,
): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  // A batch with keyed deliveries writes its results and releases their keys' next deliveries in
  // one transaction (one commit, no gap for a crash); an unkeyed batch stays a lone statement.
  if ('begin' in sql && results.some((r) => r.keyed)) {
    return (sql as Sql).begin((tx) => settle(tx, results, opsEventsPerMinute));
  }
  return settle(sql, results, opsEventsPerMinute);
}

async function settle(
  sql: Executor,
  results: CompletedAttempt[],
  opsEventsPerMinute: number,
): Promise<Set<string>> {
  const col = <K extends keyof CompletedAttempt>(key: K) => results.map((r) => r[key]);
  // What the deliveries update needs of a result, returned by each branch that takes it (owned).
  const outcome = sql`r.fate, r.status, r.attempt, r.status_code, r.error_class, r.error, r.duration_ms`;
  const rows = await sql<{ id: string; key_endpoint_id: string | null; ordering_key: string | null }[]>`
    WITH r AS (
      SELECT t.*,
        -- only rows that go back to the queue need their endpoint's state (two key lookups). A
        -- failed attempt is never the probe's exemption: a half-open circuit's probe that failed
        -- parks (its failure re-opens the circuit just after this write); left due, it could be
        -- claimed again before the breaker sees the failure, a second probe.
        CASE WHEN t.status = 'failed' THEN ${returnFate(sql, sql`t.endpoint_id`, sql`NULL::text`)} END AS fate
      FROM unnest(
        ${col('deliveryId')}::text[], ${col('endpointId')}::text[], ${col('leaseToken')}::uuid[],
        ${col('attempt')}::int[], ${results.map((r) => r.startedAt.toISOString())}::timestamptz[],
        ${col('durationMs')}::int[], ${col('statusCode')}::int[], ${col('outcome')}::text[],
        ${col('errorClass')}::text[], ${col('error')}::text[], ${col('snippet')}::text[],
        ${col('status')}::text[], ${col('delayMs')}::float8[], ${sql.array(
          results.map((r) => r.mayBeLate !== false),
          BOOL,
        )}::bool[]
      ) AS t(delivery_id, endpoint_id, lease_token, attempt, started_at, duration_ms, status_code, outcome,
             error_class, error, snippet, status, delay_ms, may_be_late)
    ),
    logged AS (
      INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code,
                                     outcome, error_class, error, response_snippet)
      SELECT delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error, snippet
      FROM r
    ),
    settled AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token
        AND (r.status <> 'failed' OR r.fate = 'cancel')
      RETURNING q.delivery_id, q.endpoint_id, q.ordering_key, ${outcome}
    ),
    retried AS (
      UPDATE delivery_queue q SET
        lease_token = NULL, lease_expires_at = NULL,
        next_attempt_at = ${waitUntil(sql, sql`r.fate`, sql`now() + r.delay_ms * interval '1 millisecond'`)}
      FROM r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.status = 'failed'
        AND r.fate <> 'cancel'
      RETURNING q.delivery_id, NULL::text AS endpoint_id, NULL::text AS ordering_key, ${outcome}
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
      RETURNING q.delivery_id, q.endpoint_id, q.ordering_key, ${outcome}
    ),
    rescued_dead AS (
      SELECT d.id AS delivery_id, NULL::text AS endpoint_id, NULL::text AS ordering_key, ${outcome}
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
      SELECT * FROM settled UNION ALL SELECT * FROM retried
      UNION ALL SELECT * FROM rescued_waiting UNION ALL SELECT * FROM rescued_dead
    ),
    done AS (
    UPDATE deliveries d SET
      status = CASE WHEN o.fate = 'cancel' THEN 'cancelled' ELSE o.status END,
      attempt_count = o.attempt,
      last_status_code = o.status_code,
      last_error_class = o.error_class,
      last_error = o.error,
      last_duration_ms = o.duration_ms,
      delivered_at = CASE WHEN o.status = 'delivered' THEN now() ELSE d.delivered_at END,
      -- NULL stays NULL on the hot path (HOT update); only a rescued dead letter loses its dead_at
      dead_at = CASE WHEN o.status = 'dead_letter' THEN now() WHEN o.status = 'delivered' THEN NULL ELSE d.dead_at END,
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
  await releaseHeads(sql, keysOf(rows));
  return new Set(rows.map((r) => r.id));
}

/**
 * Hands back claimed deliveries that were never sent (shutdown, lease too short to send, endpoint
 * disabled meanwhile): the attempt is not charged, and the row waits again as the queue-state
 * rule says (due now, parked, or cancelled for a deleted endpoint). Returns how many were handed back.
 */
export async function releaseClaims(
  sql: Executor,
  claims: { id: string; leaseToken: string }[],
): Promise<number> {
  if (claims.length === 0) return 0;
  return handBack(
    sql,
    sql`SELECT q.delivery_id, q.lease_token, q.endpoint_id
        FROM unnest(${claims.map((c) => c.id)}::text[], ${claims.map((c) => c.leaseToken)}::uuid[]) AS u(id, lease_token)
        JOIN delivery_queue q ON q.delivery_id = u.id AND q.lease_token = u.lease_token`,
  );
}

/**
 * Hands back every row still leased by the claims with these tokens: claims whose answer never
 * came (the connection died after the database committed them), so this process never learnt
 * which rows it holds. Without it they would wait out their lease after every outage.
 * Leased rows are few (at most what the dispatchers hold), so the scan of them is cheap.
 */
export async function releaseUnansweredClaims(sql: Executor, leaseTokens: string[]): Promise<number> {
  if (leaseTokens.length === 0) return 0;
  return handBack(
    sql,
    sql`SELECT q.delivery_id, q.lease_token, q.endpoint_id FROM delivery_queue q
        WHERE q.lease_expires_at IS NOT NULL AND q.lease_token = ANY(${leaseTokens}::uuid[])`,
  );
}

/** releaseClaims' transition for the leased rows `claimed` selects (delivery_id, lease_token, endpoint_id). */
async function handBack(sql: Executor, claimed: Fragment): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    WITH r AS (
      SELECT c.delivery_id, c.lease_token, ${returnFate(sql, sql`c.endpoint_id`, sql`c.delivery_id`)} AS fate
      FROM (${claimed}) c
    ),
    dropped AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.fate = 'cancel'
      RETURNING q.delivery_id
    ),
    cancelled AS (${markCancelled(sql, sql`SELECT delivery_id FROM dropped`)}),
    returned AS (
      UPDATE delivery_queue q SET
        attempt_count = q.attempt_count - 1, lease_token = NULL, lease_expires_at = NULL,
        next_attempt_at = ${waitUntil(sql, sql`r.fate`, sql`now()`)}
      FROM r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.fate <> 'cancel'
      RETURNING q.delivery_id
    )
    SELECT ((SELECT count(*) FROM dropped) + (SELECT count(*) FROM returned))::int AS n`;
  return row?.n ?? 0;
}

/**
 * Returns deliveries whose lease ran out (their dispatcher died or stalled) to the queue, as the
 * queue-state rule says (due now, parked, or cancelled for a deleted endpoint). The claimed
 * attempt stays counted, so a delivery that kills its dispatcher every time still ends in
 * dead_letter instead of looping forever.
 */
export async function reapExpiredLeases(
  sql: Executor,
  maxAttempts: number,
  limit = 1000,
  opsEventsPerMinute = DEFAULT_OPS_EVENTS_PER_MINUTE,
): Promise<{ requeued: number; deadLettered: number; cancelled: number }> {
  const rows = await sql<{ status: string; key_endpoint_id: string | null; ordering_key: string | null }[]>`
    WITH expired AS (
      -- the endpoint's own max_attempts when it has one (sql/0007), else the global one
      SELECT delivery_id, endpoint_id, ordering_key,
        attempt_count >= coalesce((SELECT me.max_attempts FROM endpoints me WHERE me.id = endpoint_id), ${maxAttempts})
          AS exhausted
      FROM delivery_queue
      WHERE lease_expires_at < now()
      ORDER BY lease_expires_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    fated AS (
      SELECT x.*, ${returnFate(sql, sql`x.endpoint_id`, sql`x.delivery_id`)} AS fate FROM expired x
    ),
    requeued AS (
      UPDATE delivery_queue q SET lease_token = NULL, lease_expires_at = NULL,
        next_attempt_at = ${waitUntil(sql, sql`f.fate`, sql`now()`)}
      FROM fated f WHERE q.delivery_id = f.delivery_id AND NOT f.exhausted AND f.fate <> 'cancel'
    ),
    dropped AS (
      DELETE FROM delivery_queue q USING fated f
      WHERE q.delivery_id = f.delivery_id AND (f.exhausted OR f.fate = 'cancel')
    ),
    done AS (
    UPDATE deliveries d SET
      status = CASE WHEN f.fate = 'cancel' THEN 'cancelled' WHEN f.exhausted THEN 'dead_letter' ELSE 'failed' END,
      dead_at = CASE WHEN f.exhausted AND f.fate <> 'cancel' THEN now() ELSE d.dead_at END,
      last_error_class = 'lease_expired', last_error = 'dispatcher lease expired before a result was recorded',
      updated_at = now()
    FROM fated f WHERE d.id = f.delivery_id
    RETURNING d.id, d.status, d.endpoint_id, d.message_id, d.attempt_count, d.last_status_code, d.last_error_class,
      CASE WHEN f.exhausted OR f.fate = 'cancel' THEN f.endpoint_id END AS key_endpoint_id, f.ordering_key
    ),
    ${deadLetterEventCtes(sql, 'dl', deadLetterRows(sql, sql`done`), opsEventsPerMinute)}
    SELECT status, key_endpoint_id, ordering_key FROM done`;
  // A dead-lettered or cancelled keyed head lets its key's next delivery go (ordering.ts).
  await releaseHeads(sql, keysOf(rows));
  const count = (status: string) => rows.filter((r) => r.status === status).length;
  return { requeued: count('failed'), deadLettered: count('dead_letter'), cancelled: count('cancelled') };
}

/** The ordering keys of rows that left the queue (`key_endpoint_id` null for the others). */
function keysOf(rows: { key_endpoint_id: string | null; ordering_key: string | null }[]): OrderingKey[] {
  const keys: OrderingKey[] = [];
  for (const r of rows) {
    if (r.key_endpoint_id !== null && r.ordering_key !== null) {
      keys.push({ endpointId: r.key_endpoint_id, orderingKey: r.ordering_key });
    }
  }
  return keys;
}
