/**
 * The dispatcher's queries after the claim (deliveries/claim.ts): complete, release, reap. Each runs as one statement per
 * batch, never inside a transaction that spans an HTTP call. Why each is shaped the way it is:
 * docs/architecture.md ("Dispatch path").
 */
import type { Sql } from '../db/connect.js';

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
}

/**
 * Writes a batch of attempt results in one statement: appends every attempt to the log, then,
 * for results whose lease still holds, deletes the queue row (settled) or re-arms it (retry),
 * and records the outcome on the delivery (a HOT update). A late finisher whose lease was taken
 * over matches no queue row and changes nothing. Returns the ids whose result took effect.
 */
export async function completeAttempts(sql: Sql, results: CompletedAttempt[]): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  const col = <K extends keyof CompletedAttempt>(key: K) => results.map((r) => r[key]);
  const rows = await sql<{ id: string }[]>`
    WITH r AS (
      SELECT * FROM unnest(
        ${col('deliveryId')}::text[], ${col('endpointId')}::text[], ${col('leaseToken')}::uuid[],
        ${col('attempt')}::int[], ${results.map((r) => r.startedAt.toISOString())}::timestamptz[],
        ${col('durationMs')}::int[], ${col('statusCode')}::int[], ${col('outcome')}::text[],
        ${col('errorClass')}::text[], ${col('error')}::text[], ${col('snippet')}::text[],
        ${col('status')}::text[], ${col('delayMs')}::float8[]
      ) AS t(delivery_id, endpoint_id, lease_token, attempt, started_at, duration_ms, status_code, outcome,
             error_class, error, snippet, status, delay_ms)
    ),
    logged AS (
      INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code,
                                     outcome, error_class, error, response_snippet)
      SELECT delivery_id, endpoint_id, attempt, started_at, duration_ms, status_code, outcome, error_class, error, snippet
      FROM r
    ),
    settled AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.status <> 'failed'
      RETURNING q.delivery_id
    ),
    retried AS (
      UPDATE delivery_queue q SET
        lease_token = NULL, lease_expires_at = NULL,
        next_attempt_at = now() + r.delay_ms * interval '1 millisecond'
      FROM r
      WHERE q.delivery_id = r.delivery_id AND q.lease_token = r.lease_token AND r.status = 'failed'
      RETURNING q.delivery_id
    ),
    owned AS (SELECT delivery_id FROM settled UNION ALL SELECT delivery_id FROM retried)
    UPDATE deliveries d SET
      status = r.status,
      attempt_count = r.attempt,
      last_status_code = r.status_code,
      last_error_class = r.error_class,
      last_error = r.error,
      last_duration_ms = r.duration_ms,
      delivered_at = CASE WHEN r.status = 'delivered' THEN now() ELSE d.delivered_at END,
      dead_at = CASE WHEN r.status = 'dead_letter' THEN now() ELSE d.dead_at END,
      updated_at = now()
    FROM r JOIN owned o ON o.delivery_id = r.delivery_id
    WHERE d.id = r.delivery_id
    RETURNING d.id`;
  return new Set(rows.map((r) => r.id));
}

/**
 * Hands back claimed deliveries that were never sent (shutdown, endpoint disabled meanwhile):
 * the attempt is not charged and the row is due again at once for any dispatcher.
 */
export async function releaseClaims(
  sql: Sql,
  claims: { id: string; leaseToken: string }[],
  /** 'park' for a disabled endpoint: wait at 'infinity' until it is re-enabled. */
  due: 'now' | 'park' = 'now',
): Promise<number> {
  if (claims.length === 0) return 0;
  const rows = await sql`
    UPDATE delivery_queue q SET
      attempt_count = q.attempt_count - 1, lease_token = NULL, lease_expires_at = NULL,
      next_attempt_at = ${due === 'park' ? sql`'infinity'::timestamptz` : sql`now()`}
    FROM unnest(${claims.map((c) => c.id)}::text[], ${claims.map((c) => c.leaseToken)}::uuid[]) AS r(id, lease_token)
    WHERE q.delivery_id = r.id AND q.lease_token = r.lease_token
    RETURNING q.delivery_id`;
  return rows.length;
}

/**
 * Returns deliveries whose lease ran out (their dispatcher died or stalled) to the queue. The
 * claimed attempt stays counted, so a delivery that kills its dispatcher every time still ends
 * in dead_letter instead of looping forever.
 */
export async function reapExpiredLeases(
  sql: Sql,
  maxAttempts: number,
  limit = 1000,
): Promise<{ requeued: number; deadLettered: number }> {
  const rows = await sql<{ status: string }[]>`
    WITH expired AS (
      SELECT delivery_id, attempt_count >= ${maxAttempts} AS exhausted FROM delivery_queue
      WHERE lease_expires_at < now()
      ORDER BY lease_expires_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    requeued AS (
      UPDATE delivery_queue q SET lease_token = NULL, lease_expires_at = NULL, next_attempt_at = now()
      FROM expired e WHERE q.delivery_id = e.delivery_id AND NOT e.exhausted
    ),
    dropped AS (
      DELETE FROM delivery_queue q USING expired e WHERE q.delivery_id = e.delivery_id AND e.exhausted
    )
    UPDATE deliveries d SET
      status = CASE WHEN e.exhausted THEN 'dead_letter' ELSE 'failed' END,
      dead_at = CASE WHEN e.exhausted THEN now() ELSE d.dead_at END,
      last_error_class = 'lease_expired', last_error = 'dispatcher lease expired before a result was recorded',
      updated_at = now()
    FROM expired e WHERE d.id = e.delivery_id
    RETURNING d.status`;
  const deadLettered = rows.filter((r) => r.status === 'dead_letter').length;
  return { requeued: rows.length - deadLettered, deadLettered };
}

/** When the next delivery becomes due (null when nothing is waiting), to sleep exactly that long. */
export async function nextDueAt(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ at: Date | null }[]>`
    SELECT min(next_attempt_at) AS at FROM delivery_queue
    WHERE lease_expires_at IS NULL AND next_attempt_at < 'infinity'`;
  return row?.at ?? null;
}

/**
 * Disables endpoints (e.g. after 410 Gone) and parks their queued deliveries at 'infinity' so
 * claims skip them cheaply; they are kept and resume when the endpoint is re-enabled.
 */
export async function disableEndpoints(sql: Sql, ids: string[], reason: string): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    WITH disabled AS (
      UPDATE endpoints SET enabled = false, disabled_reason = ${reason}, disabled_at = now(), updated_at = now()
      WHERE id = ANY(${ids}::text[]) AND enabled
      RETURNING id
    )
    UPDATE delivery_queue SET next_attempt_at = 'infinity'
    WHERE endpoint_id IN (SELECT id FROM disabled) AND lease_expires_at IS NULL`;
}
