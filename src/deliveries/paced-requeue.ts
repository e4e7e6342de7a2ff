/**
 * The loop that bulk replay (bulk-replay.ts) and resend (resend.ts) share: work through a planned,
 * audited set of deliveries batch by batch, one short transaction each (lock the batch's rows,
 * requeue the ones the caller wants, advance the audit row, notify the dispatchers), no faster
 * than the pace's rate on average, then mark the audit row finished, interrupted or failed. A
 * crash loses at most the batch in progress; the rest was simply not requeued. What differs
 * between the two, which rows a batch reads and which of them it requeues, is the caller's
 * `select`.
 */
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/connect.js';
import { opsEventCtes } from '../ops-events/events.js';
import { wakeDispatchersOnCommit } from '../queue/wakeup.js';
import { requeueLocked } from './replay.js';

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

/** One batch as the caller's select read it, its rows locked (FOR UPDATE) in `tx`. */
export interface PacedBatch<Cursor> {
  /** How many rows the batch read; 0 ends the run. */
  read: number;
  /** The ids to requeue, in order (requeueLocked may still leave some out). */
  wanted: string[];
  /** Where the next batch starts. */
  next: Cursor;
}

/** Sleeps `ms`, waking early (and resolving) when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
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
 * Requeues the planned set audited as `auditId` (`matched` rows), batch by batch from `cursor`,
 * the deliveries within a batch spaced 1/rate apart. Stops between batches when the pace's signal
 * aborts (state `interrupted`). Matched rows that no batch requeued count as skipped.
 */
export async function requeueInPacedBatches<Cursor>(
  sql: Sql,
  plan: { auditId: string; matched: number },
  pace: ReplayPace,
  cursor: Cursor,
  select: (tx: TransactionSql, cursor: Cursor, limit: number) => Promise<PacedBatch<Cursor>>,
): Promise<ReplayOutcome> {
  const spacingMs = 1000 / pace.ratePerSecond;
  const progress: ReplayProgress = { matched: plan.matched, replayed: 0, skipped: 0 };
  const started = performance.now();
  try {
    for (;;) {
      if (pace.signal?.aborted) break;
      const batch = await sql.begin(async (tx) => {
        const read = await select(tx, cursor, pace.batchSize);
        const wanted = read.wanted.map((id, i) => ({ id, delayMs: i * spacingMs }));
        const requeued = await requeueLocked(tx, wanted, plan.auditId);
        await tx`
          UPDATE replay_audit SET replayed = replayed + ${requeued.length},
            skipped = skipped + ${read.read - requeued.length}, updated_at = now()
          WHERE id = ${plan.auditId}`;
        if (requeued.length > 0) await wakeDispatchersOnCommit(tx);
        return { ...read, requeued: requeued.length };
      });
      if (batch.read === 0) break;
      cursor = batch.next;
      progress.replayed += batch.requeued;
      progress.skipped += batch.read - batch.requeued;
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
  // Matched rows that no batch saw any more (requeued meanwhile by someone else) count as skipped.
  if (state === 'finished') progress.skipped = plan.matched - progress.replayed;
  await finishAudit(sql, plan.auditId, state, state === 'finished' ? progress.skipped : undefined);
  return { ...progress, state };
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
