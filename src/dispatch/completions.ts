/**
 * Batches attempt results into one completeAttempts() statement per flush: a flush starts when
 * `maxBatch` results are waiting or `delayMs` after the first one, and only one runs at a time,
 * so under load results coalesce into large batches and at low load they are written at once.
 *
 * When the database cannot be reached, results stay here (bounded) and the writer keeps trying
 * with a backoff of at most a second, so they are written as soon as it is back. A result whose
 * lease has run out is given up (the reaper takes the delivery back and it is sent again, with
 * the same webhook-id), except a success: it is kept, because the statement accepts a late
 * success on a row nobody holds, and a delivered delivery must not be sent again or end as a
 * dead letter. Why: docs/architecture.md ("Completion writes in an outage").
 */
import type { Sql } from '../db/connect.js';
import { type CompletedAttempt, completeAttempts } from '../deliveries/queue.js';
import { errorFields, type Logger } from '../log.js';
import { recordStoredAttempts } from '../metrics/delivery-metrics.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { DEFAULT_OPS_EVENTS_PER_MINUTE } from '../ops-events/events.js';
import { beforeDeadline } from '../util/deadline.js';
import { resultMayBeLate } from './lease.js';

/**
 * The most results kept while they cannot be written. The claim loop stops claiming while the
 * database is down, so at most the in-flight and buffered claims (3 × concurrency) pile up here;
 * the bound only matters for a huge concurrency. About 1–2 KB each with the response snippet.
 */
export const MAX_PENDING_RESULTS = 50_000;
/** Longest wait between two write attempts while the database is unreachable (ms). */
const MAX_RETRY_DELAY_MS = 1000;

interface Pending {
  result: CompletedAttempt;
  /** Local clock (ms) after which the lease is surely gone; past it only a success is kept. */
  leaseEndsAt: number;
  /** A success not applied is tried once more (the reaper may have just taken the row). */
  retriedLate: boolean;
}

export class CompletionWriter {
  private pending: Pending[] = [];
  /** Results of the write running now: not in `pending`, not yet stored. */
  private writing = 0;
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private followUps: CompletedAttempt[] = [];
  private followUpRunning: Promise<void> | undefined;
  private wakeRetry: (() => void) | undefined;
  private giveUpAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly onWritten: (batch: CompletedAttempt[]) => Promise<void>,
    private readonly metrics?: HookpostMetrics,
    private readonly maxBatch = 1000,
    private readonly delayMs = 2,
    private readonly maxPending = MAX_PENDING_RESULTS,
    /** HOOKPOST_OPS_EVENTS_PER_MINUTE: the dead-letter events' cap (ops-events/events.ts). */
    private readonly opsEventsPerMinute = DEFAULT_OPS_EVENTS_PER_MINUTE,
  ) {}

  /** Results waiting to be written (for tests and the shutdown log). */
  get waiting(): number {
    return this.pending.length;
  }

  add(result: CompletedAttempt, leaseEndsAt: number): void {
    this.push({ result, leaseEndsAt, retriedLate: false });
    if (this.flushing) return; // the running flush picks these up when it finishes
    if (this.pending.length >= this.maxBatch) this.startFlush();
    else this.timer ??= setTimeout(() => this.startFlush(), this.delayMs);
  }

  private push(item: Pending): void {
    this.pending.push(item);
    if (this.pending.length <= this.maxPending) return;
    // Over the bound: drop the oldest failure first (it is retried after its lease anyway).
    const index = this.pending.findIndex((p) => p.result.status !== 'delivered');
    const [dropped] = this.pending.splice(Math.max(index, 0), 1);
    this.log.error(
      { deliveryId: dropped!.result.deliveryId },
      'result buffer full: dropped the oldest result',
    );
  }

  private startFlush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.flushing || this.pending.length === 0) return;
    this.flushing = this.flushLoop().finally(() => {
      this.flushing = undefined;
    });
  }

  private async flushLoop(): Promise<void> {
    let failures = 0;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      const writeAt = Date.now();
      // A success tried again after it was not applied is always looked up as a late one.
      for (const p of batch) p.result.mayBeLate = p.retriedLate || resultMayBeLate(writeAt, p.leaseEndsAt);
      const results = batch.map((p) => p.result);
      this.writing = batch.length;
      try {
        const applied = await completeAttempts(this.sql, results, this.opsEventsPerMinute);
        this.writing = 0;
        if (failures > 0) this.log.info({ failures }, 'writing results works again');
        failures = 0;
        // Counted only once stored, so the metrics never run ahead of the attempt log.
        if (this.metrics) recordStoredAttempts(this.metrics, results, applied);
        const late = batch.filter((p) => !applied.has(p.result.deliveryId));
        const again = late.filter((p) => p.result.status === 'delivered' && !p.retriedLate);
        for (const p of again) this.push({ ...p, retriedLate: true });
        if (late.length > again.length) {
          this.log.warn(
            { lost: late.length - again.length },
            'results for deliveries whose lease was taken over were not applied',
          );
        }
        this.queueFollowUp(results.filter((r) => applied.has(r.deliveryId)));
      } catch (error) {
        this.writing = 0;
        failures++;
        // One line for the first failure, then at 2, 4, 8 …: an outage must not flood the log.
        if ((failures & (failures - 1)) === 0) {
          this.log.error(
            { ...errorFields(error), failures, waiting: this.pending.length + batch.length },
            'writing results failed',
          );
        }
        const now = Date.now();
        const kept = batch.filter((p) => p.result.status === 'delivered' || p.leaseEndsAt > now);
        if (kept.length < batch.length) {
          this.log.warn(
            { dropped: batch.length - kept.length },
            'gave up results whose lease ran out while they could not be written; they will be sent again',
          );
        }
        this.pending.unshift(...kept);
        if (Date.now() >= this.giveUpAt) break;
        await this.pause(Math.min(MAX_RETRY_DELAY_MS, 50 * 2 ** failures));
      }
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, Math.min(ms, this.giveUpAt - Date.now())));
      this.wakeRetry = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /**
   * Follow-up work (breakers, latency, 410) runs beside the result writes, never in front of
   * them: results accumulated while one follow-up runs are handled together by the next, in
   * order. A follow-up failing is logged; the stored results stand.
   */
  private queueFollowUp(batch: CompletedAttempt[]): void {
    if (batch.length === 0) return;
    this.followUps.push(...batch);
    this.followUpRunning ??= (async () => {
      while (this.followUps.length > 0) {
        const next = this.followUps.splice(0);
        await this.onWritten(next).catch((error: unknown) =>
          this.log.error(errorFields(error), 'after-write step failed'),
        );
      }
    })().finally(() => {
      this.followUpRunning = undefined;
    });
  }

  /**
   * Writes everything still waiting, and its follow-ups; resolves when done, or at `deadline`
   * (epoch ms) if the database stays unreachable, returning how many results were left unwritten:
   * those waiting and those of a write still unanswered (a database that stopped answering).
   */
  async drain(deadline = Number.POSITIVE_INFINITY): Promise<number> {
    this.giveUpAt = deadline;
    this.wakeRetry?.();
    while (this.flushing || this.pending.length > 0 || this.followUpRunning) {
      this.startFlush();
      // A statement that never answers (a network that drops packets without a reset) must
      // not hold the shutdown past its deadline.
      await beforeDeadline(this.flushing, deadline);
      await beforeDeadline(this.followUpRunning, deadline);
      if (Date.now() >= deadline) break;
    }
    return this.pending.length + this.writing;
  }
}
