/**
 * Batches attempt results into one completeAttempts() statement per flush: a flush starts when
 * `maxBatch` results are waiting, or `lingerMs` after the first one (`delayMs` when a result
 * holds up an ordering key's next delivery or a max_in_flight slot, or is a failure the circuit
 * breaker must count, in the same transaction: `withFailures`), and only one runs at a time,
 * so under load results coalesce into large batches. At a steady low rate the linger is what
 * batches them: a flush and its follow-ups are three statements whatever their size, and written
 * per attempt they were most of the dispatcher's and the database's CPU per delivery
 * (docs/performance.md, "Steady rates"). Only the delivery's stored status waits on the write (and
 * a replay of it, refused while it is still queued): the partner already has the request.
 *
 * When the database cannot be reached, results stay here (bounded) and the writer keeps trying
 * with a backoff of at most a second, so they are written as soon as it is back. A result whose
 * lease has run out is given up (the reaper takes the delivery back and it is sent again, with
 * the same webhook-id), except a success: it is kept, because the statement accepts a late
 * success on a row nobody holds, and a delivered delivery must not be sent again or end as a
 * dead letter. Why: docs/architecture.md ("Completion writes in an outage").
 */
import type { Executor, Sql } from '../db/connect.js';
import type { DatabaseOutages } from '../db/outage.js';
import { errorFields, type Logger } from '../log.js';
import { recordStoredAttempts } from '../metrics/delivery-metrics.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import { DEFAULT_OPS_EVENTS_PER_MINUTE } from '../ops-events/events.js';
import { type CompletedAttempt, completeAttempts } from '../queue/complete.js';
import { beforeDeadline } from '../util/deadline.js';
import { resultMayBeLate } from './lease.js';

/**
 * The most results kept while they cannot be written. The claim loop stops claiming while the
 * database is down, so at most the in-flight and buffered claims (3 × concurrency) pile up here;
 * the bound only matters for a huge concurrency. About 1–2 KB each with the response snippet.
 */
export const MAX_PENDING_RESULTS = 50_000;
/**
 * How long a result waits for others before it is written (ms): at most 10 result writes a
 * second at low rates. 50 ms (20 a second) cost 7 – 14% more CPU per delivery at 200/s
 * (docs/performance.md, "Steady rates").
 */
export const DEFAULT_RESULT_LINGER_MS = 100;
/** Longest wait between two write attempts while the database is unreachable (ms). */
const MAX_RETRY_DELAY_MS = 1000;

interface Pending {
  result: CompletedAttempt;
  /** Local clock (ms) after which the lease is surely gone; past it only a success is kept. */
  leaseEndsAt: number;
  /** A success not applied is tried once more (the reaper may have just taken the row). */
  retriedLate: boolean;
}

export interface CompletionWriterOptions {
  sql: Sql;
  log: Logger;
  /** The follow-up of every batch whose results took effect (breakers, latency, 410). */
  onWritten: (batch: CompletedAttempt[]) => Promise<void>;
  /**
   * Run in the write's own transaction, on the results that took effect, when the batch holds a
   * retryable failure; returns what to do once that is committed. The circuit breaker's count:
   * a failure's retry and its max_in_flight slot become claimable only together with the count
   * that may open the circuit, so no claim slips in between (a follow-up after the commit left a
   * gap that let the other dispatchers send more than the threshold's requests).
   */
  withFailures?: (tx: Executor, applied: CompletedAttempt[]) => Promise<() => void>;
  metrics?: HookpostMetrics | undefined;
  /** Results per statement at most (default 1000). */
  maxBatch?: number;
  /** How long after the first waiting result a flush starts (ms, default 100). */
  lingerMs?: number;
  /**
   * The same for a result of an ordered (keyed) delivery, whose key's next delivery is released
   * only once it is written, of an endpoint with max_in_flight, whose slot is free only then, or
   * a retryable failure, which the circuit breaker counts only then (ms, default 2).
   */
  delayMs?: number;
  /** Results kept while they cannot be written (default MAX_PENDING_RESULTS). */
  maxPending?: number;
  /** HOOKPOST_OPS_EVENTS_PER_MINUTE: the dead-letter events' cap (ops-events/events.ts). */
  opsEventsPerMinute?: number;
  /** Where an unavailable database is reported (once per outage) instead of this writer's own lines. */
  outages?: Pick<DatabaseOutages, 'absorb'> | undefined;
}

export class CompletionWriter {
  private pending: Pending[] = [];
  /** Results of the write running now: not in `pending`, not yet stored. */
  private writing = 0;
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the scheduled flush starts (local clock, ms). */
  private timerAt = Number.POSITIVE_INFINITY;
  private followUps: CompletedAttempt[] = [];
  private followUpRunning: Promise<void> | undefined;
  private wakeRetry: (() => void) | undefined;
  private giveUpAt = Number.POSITIVE_INFINITY;
  private readonly outages: Pick<DatabaseOutages, 'absorb'> | undefined;
  private readonly sql: Sql;
  private readonly log: Logger;
  private readonly onWritten: (batch: CompletedAttempt[]) => Promise<void>;
  private readonly withFailures: CompletionWriterOptions['withFailures'];
  private readonly metrics: HookpostMetrics | undefined;
  private readonly maxBatch: number;
  private readonly delayMs: number;
  private readonly lingerMs: number;
  private readonly maxPending: number;
  private readonly opsEventsPerMinute: number;

  constructor(options: CompletionWriterOptions) {
    this.sql = options.sql;
    this.log = options.log;
    this.onWritten = options.onWritten;
    this.withFailures = options.withFailures;
    this.metrics = options.metrics;
    this.maxBatch = options.maxBatch ?? 1000;
    this.delayMs = options.delayMs ?? 2;
    this.lingerMs = options.lingerMs ?? DEFAULT_RESULT_LINGER_MS;
    this.maxPending = options.maxPending ?? MAX_PENDING_RESULTS;
    this.opsEventsPerMinute = options.opsEventsPerMinute ?? DEFAULT_OPS_EVENTS_PER_MINUTE;
    this.outages = options.outages;
  }

  /** Results waiting to be written (for tests and the shutdown log). */
  get waiting(): number {
    return this.pending.length;
  }

  add(result: CompletedAttempt, leaseEndsAt: number): void {
    this.push({ result, leaseEndsAt, retriedLate: false });
    if (this.flushing) return; // the running flush picks these up when it finishes
    if (this.pending.length >= this.maxBatch) this.startFlush();
    else this.flushIn(this.isUrgent(result) ? this.delayMs : this.lingerMs);
  }

  /** Whether the result holds up a claim or a circuit until written (`delayMs`, not `lingerMs`). */
  private isUrgent(result: CompletedAttempt): boolean {
    return result.keyed === true || result.freesSlot === true || result.outcome === 'retryable';
  }

  /** Schedules a flush `ms` from now, unless one is due sooner. */
  private flushIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.startFlush(), ms);
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
    this.timerAt = Number.POSITIVE_INFINITY;
    if (this.flushing || this.pending.length === 0) return;
    this.flushing = this.flushLoop().finally(() => {
      this.flushing = undefined;
    });
  }

  private async flushLoop(): Promise<void> {
    let failures = 0;
    let logged = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      const writeAt = Date.now();
      // A success tried again after it was not applied is always looked up as a late one.
      for (const p of batch) p.result.mayBeLate = p.retriedLate || resultMayBeLate(writeAt, p.leaseEndsAt);
      const results = batch.map((p) => p.result);
      this.writing = batch.length;
      try {
        let committed: (() => void) | undefined;
        const withFailures = this.withFailures;
        const alongside =
          withFailures && results.some((r) => r.outcome === 'retryable')
            ? async (tx: Executor, done: CompletedAttempt[]) => {
                committed = await withFailures(tx, done);
              }
            : undefined;
        const applied = await completeAttempts(this.sql, results, this.opsEventsPerMinute, alongside);
        committed?.();
        this.writing = 0;
        if (logged) this.log.info({ failures }, 'writing results works again');
        failures = 0;
        logged = false;
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
        // An outage is the outage log's to report; other failures get one line for the first,
        // then at 2, 4, 8 …
        if (!this.outages?.absorb(error, 'writing results') && (failures & (failures - 1)) === 0) {
          logged = true;
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
        await this.onWritten(next).catch((error: unknown) => {
          if (!this.outages?.absorb(error, 'after-write step'))
            this.log.error(errorFields(error), 'after-write step failed');
        });
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
