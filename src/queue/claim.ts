/**
 * Claiming due deliveries: fair across endpoints, within each endpoint's limits, and honouring
 * its circuit breaker. Why it is shaped this way: docs/architecture.md ("Claiming").
 */
import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/connect.js';
import { utf8Server } from '../db/encoding.js';
import { withWaitingEndpoints } from './states.js';

export interface ClaimedDelivery {
  id: string;
  messageId: string;
  endpointId: string;
  attempt: number;
  leaseToken: string;
  payload: Buffer;
  /** Its number within its (endpoint, ordering key), sent as hookpost-sequence; null when unkeyed. */
  sequence: string | null;
  /**
   * The endpoint's `config_version` as the claim read it: the endpoint cache compares it with
   * its own, so a change committed before the claim is seen without a query of its own.
   */
  endpointVersion: string;
  /** The message's W3C traceparent (sql/0018): its attempts are spans of that trace; null untraced. */
  traceparent: string | null;
  /** A replay's or resend's traceparent, kept on the queue row: its attempts continue that trace instead. */
  replayTraceparent: string | null;
}

/**
 * A claimed row as the wire delivers it (postgres.js `raw()`): one Buffer per column, in the
 * RETURNING order below, null for SQL NULL. Read raw, a payload is never a JS string: a text
 * column becomes a 1 KB string per row that `Buffer.from` then copies again, and at a few
 * thousand rows a second those strings outlived young-generation collections (they were the
 * largest share of what the dispatcher's collections promoted; docs/performance.md).
 */
type ClaimRow = (Buffer | null)[];
const ID = 0;
const MESSAGE_ID = 1;
const ENDPOINT_ID = 2;
const ATTEMPT = 3;
const PAYLOAD = 4;
const SEQUENCE = 5;
const ENDPOINT_VERSION = 6;
const TRACEPARENT = 7;
const REPLAY_TRACEPARENT = 8;
/** Only in the trailing row of a short claim, whose other columns are NULL: see claimBatch. */
const NEXT_DUE = 9;

/** What one claim statement returns. */
export interface ClaimBatch {
  deliveries: ClaimedDelivery[];
  /**
   * Only when the claim came back short (fewer than `limit` rows): when the next waiting row not
   * taken by this claim is due (null: none is), as the claim's snapshot saw it. A full claim
   * leaves it undefined: there may be more due right now, so the caller claims again.
   */
  nextDueAt?: Date | null;
}

export interface ClaimOptions {
  limit: number;
  leaseSeconds: number;
  /** Endpoints this process already has enough of (local fairness); not claimed this round. */
  saturated: string[];
  /** The most one endpoint may get in one claim (its share of this process's buffer). */
  perEndpointLimit: number;
  /** Whether any enabled endpoint has a rate or concurrency limit (anyLimitedEndpoints). */
  limitedEndpoints: boolean;
  /**
   * The lease token every row of this claim gets (default: a fresh one). Chosen by the caller so
   * that a claim whose answer was lost (the connection died after the commit) can still be
   * handed back by its token (releaseStrandedClaims) instead of waiting out its lease.
   */
  leaseToken?: string;
}

/**
 * Claims up to about `limit` due deliveries in one short transaction, committed before any HTTP
 * call (step 1 only when limited endpoints exist):
 * 1. lock the health rows of rate- or concurrency-limited endpoints (SKIP LOCKED: another
 *    dispatcher claiming for one of them right now means we leave it alone this round), so the
 *    counts read next are exact across processes;
 * 2. one statement: find endpoints with waiting rows (loose index scan), give each an allowance
 *    (a fair share of `limit`, minus its in-flight count under max_in_flight, within its token
 *    bucket; only the probe while its breaker is not closed), take each one's oldest due rows
 *    with SKIP LOCKED, lease them, charge the tokens, and return them with their payloads.
 *
 * A short claim also says when the next row is due: the claim loop's sleep at low rates comes
 * with the claim instead of from a query of its own (one round trip per wake-up fewer).
 */
export async function claimBatch(sql: Sql, options: ClaimOptions): Promise<ClaimBatch> {
  // Every stored payload is UTF-8 without NUL (the API cuts it out of a JSON body decoded as
  // strict UTF-8), so on a UTF-8 server convert_from is the identity and half the bytes of hex.
  const asText = utf8Server(sql);
  const token = options.leaseToken ?? randomUUID();
  // Fast path: with no limited endpoint there is no shared counter to serialize on, so the claim
  // is one statement in its own implicit transaction: one round trip instead of four. Limited
  // endpoints are left out of it, in case one appeared since the caller last checked.
  const rows = options.limitedEndpoints
    ? await sql.begin(async (tx) => {
        const limited = await tx<{ id: string; mine: boolean }[]>`
          WITH mine AS (
            SELECT h.endpoint_id FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id
            WHERE e.enabled AND (e.max_in_flight IS NOT NULL OR e.rate_limit_per_second IS NOT NULL)
            FOR UPDATE OF h SKIP LOCKED
          )
          SELECT e.id, e.id IN (SELECT endpoint_id FROM mine) AS mine FROM endpoints e
          WHERE e.enabled AND (e.max_in_flight IS NOT NULL OR e.rate_limit_per_second IS NOT NULL)`;
        const skip = [...options.saturated, ...limited.filter((l) => !l.mine).map((l) => l.id)];
        return claimStatement(tx, options, token, skip, true, asText);
      })
    : await claimStatement(sql, options, token, options.saturated, false, asText);
  let nextDueAt: Date | null | undefined;
  const deliveries: ClaimedDelivery[] = [];
  for (const r of rows) {
    if (r[ID] === null) {
      nextDueAt = r[NEXT_DUE] === null ? null : new Date(Number(text(r[NEXT_DUE])));
      continue;
    }
    deliveries.push(claimed(r, token, asText));
  }
  return { deliveries, nextDueAt };
}

function claimed(r: ClaimRow, token: string, asText: boolean): ClaimedDelivery {
  return {
    id: text(r[ID]),
    messageId: text(r[MESSAGE_ID]),
    endpointId: text(r[ENDPOINT_ID]),
    attempt: Number(text(r[ATTEMPT])),
    leaseToken: token,
    // On a UTF-8 server the text column's wire bytes are the stored bytes: a view, no copy (it
    // keeps the socket chunk it sits in alive until the delivery is done). Otherwise bytea's hex.
    payload: asText ? r[PAYLOAD]! : Buffer.from(text(r[PAYLOAD]).slice(2), 'hex'),
    sequence: r[SEQUENCE] === null ? null : text(r[SEQUENCE]),
    endpointVersion: text(r[ENDPOINT_VERSION]),
    traceparent: r[TRACEPARENT] === null ? null : text(r[TRACEPARENT]),
    replayTraceparent: r[REPLAY_TRACEPARENT] === null ? null : text(r[REPLAY_TRACEPARENT]),
  };
}

/** A non-null column as text: ids, numbers and the hex form are ASCII. */
function text(column: Buffer | null | undefined): string {
  return column!.toString('latin1');
}

/** Step 2 above: the claim statement, in the caller's transaction or as a statement of its own. */
function claimStatement(
  tx: Sql | TransactionSql,
  options: ClaimOptions,
  leaseToken: string,
  skip: string[],
  includeLimited: boolean,
  asText: boolean,
): Promise<ClaimRow[]> {
  return tx`
    ${withWaitingEndpoints(tx)},
    active AS (
      SELECT w.endpoint_id FROM waiting w WHERE w.endpoint_id IS NOT NULL AND NOT (w.endpoint_id = ANY(${skip}::text[]))
    ),
    allowance AS (
      SELECT e.id AS endpoint_id, e.config_version, h.state, h.probe_delivery_id,
        e.rate_limit_per_second AS rate,
        -- a bucket holds at most a fifth of a second's worth (at least 1): small bursts only
        LEAST(greatest(1, e.rate_limit_per_second / 5),
              coalesce(h.tokens, greatest(1, e.rate_limit_per_second / 5))
                + e.rate_limit_per_second * extract(epoch FROM now() - coalesce(h.tokens_at, now()))) AS tokens,
        LEAST(
          ceil(${options.limit}::float8 / (SELECT count(*) FROM active))::int + 1,
          ${options.perEndpointLimit}::int,
          CASE WHEN e.max_in_flight IS NULL THEN ${options.limit}
               ELSE e.max_in_flight - (SELECT count(*) FROM delivery_queue l
                                        WHERE l.endpoint_id = e.id AND l.lease_expires_at IS NOT NULL)::int END
        ) AS slots
      FROM active a JOIN endpoints e ON e.id = a.endpoint_id AND e.enabled
        AND (${includeLimited}::boolean OR (e.max_in_flight IS NULL AND e.rate_limit_per_second IS NULL))
      JOIN endpoint_health h ON h.endpoint_id = e.id
    ),
    picked AS (
      SELECT p.tid, a.endpoint_id, a.config_version FROM allowance a CROSS JOIN LATERAL (
        SELECT q.ctid AS tid FROM delivery_queue q
        WHERE q.endpoint_id = a.endpoint_id AND q.state = 'scheduled' AND q.next_attempt_at <= now()
          AND (a.state = 'closed' OR q.delivery_id = a.probe_delivery_id)
        -- endpoint_id first, though it is fixed here: steers the planner to the per-endpoint
        -- index instead of walking the global due index past every other endpoint's rows
        ORDER BY q.endpoint_id, q.next_attempt_at
        LIMIT greatest(0, LEAST(a.slots, CASE WHEN a.rate IS NULL THEN a.slots ELSE floor(a.tokens)::int END))
        FOR UPDATE SKIP LOCKED
      ) p
    ),
    charged AS (
      UPDATE endpoint_health h SET tokens = a.tokens - c.n, tokens_at = now()
      FROM (SELECT endpoint_id, count(*) AS n FROM picked GROUP BY endpoint_id) c
      JOIN allowance a ON a.endpoint_id = c.endpoint_id
      WHERE h.endpoint_id = c.endpoint_id AND a.rate IS NOT NULL
    ),
    claimed AS (
      UPDATE delivery_queue q SET
        state = 'leased', lease_token = ${leaseToken}::uuid,
        lease_expires_at = now() + make_interval(secs => ${options.leaseSeconds}),
        attempt_count = q.attempt_count + 1
      -- By the locked row's ctid: a TID scan per row instead of a second primary-key descent. The
      -- row is locked by this statement, so nothing moves it in between; were the ctid ever
      -- stale, the row would merely not be claimed this round.
      FROM picked, messages m
      WHERE q.ctid = picked.tid AND m.id = q.message_id
      RETURNING q.delivery_id, q.message_id, q.endpoint_id, q.attempt_count,
        ${asText ? tx`convert_from(m.payload, 'UTF8')` : tx`m.payload`} AS payload, q.sequence::text AS sequence,
        picked.config_version::text AS config_version,
        -- NULL (a few bytes a row) unless tracing was on when the message or the replay was made
        m.traceparent, q.traceparent AS replay_traceparent
    )
    SELECT *, NULL::text AS next_due FROM claimed
    UNION ALL
    -- A short claim's trailing row: when the next row it did not take is due, in epoch ms. The
    -- statement's snapshot still shows the rows just claimed as waiting, hence the NOT IN (a
    -- hashed subplan over at most \`limit\` ids). Rows committed after the snapshot come with a
    -- NOTIFY, which the loop's sleep keeps (wake-signal.ts). A full claim skips it.
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      (SELECT floor(extract(epoch FROM w.next_attempt_at) * 1000)::bigint::text FROM delivery_queue w
       WHERE w.state = 'scheduled' AND w.delivery_id NOT IN (SELECT delivery_id FROM claimed)
       ORDER BY w.next_attempt_at LIMIT 1)
    WHERE (SELECT count(*) FROM claimed) < ${options.limit}`.raw();
}

/** Whether an enabled endpoint has a rate or concurrency limit: claims for it need the lock step. */
export async function anyLimitedEndpoints(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ any: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM endpoints
                   WHERE enabled AND (max_in_flight IS NOT NULL OR rate_limit_per_second IS NOT NULL)) AS any`;
  return row?.any ?? false;
}
