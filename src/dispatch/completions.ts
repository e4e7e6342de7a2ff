/**
 * Batches attempt results into one completeAttempts() statement per flush: a flush starts when
 * `maxBatch` results are waiting or `delayMs` after the first one, and only one runs at a time,
 * so under load results coalesce into large batches and at low load they are written at once.
 */
import type { Sql } from '../db/connect.js';
import { type CompletedAttempt, completeAttempts } from '../deliveries/queue.js';
import type { Logger } from '../log.js';
import { recordStoredAttempts } from '../metrics/delivery-metrics.js';
import type { HookpostMetrics } from '../metrics/registry.js';

export class CompletionWriter {
  private pending: CompletedAttempt[] = [];
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private followUps: CompletedAttempt[] = [];
  private followUpRunning: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly onWritten: (batch: CompletedAttempt[]) => Promise<void>,
    private readonly metrics?: HookpostMetrics,
    private readonly maxBatch = 1000,
    private readonly delayMs = 2,
  ) {}

  add(result: CompletedAttempt): void {
    this.pending.push(result);
    if (this.flushing) return; // the running flush picks these up when it finishes
    if (this.pending.length >= this.maxBatch) this.startFlush();
    else this.timer ??= setTimeout(() => this.startFlush(), this.delayMs);
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
      try {
        const applied = await completeAttempts(this.sql, batch);
        failures = 0;
        // Counted only once stored, so the metrics never run ahead of the attempt log.
        if (this.metrics) recordStoredAttempts(this.metrics, batch, applied);
        if (applied.size < batch.length) {
          this.log.warn(
            { lost: batch.length - applied.size },
            'results for deliveries whose lease was taken over were not applied',
          );
        }
        this.queueFollowUp(batch.filter((r) => applied.has(r.deliveryId)));
      } catch (error) {
        failures++;
        this.log.error(
          { errorName: (error as Error).name, message: (error as Error).message, failures },
          'writing results failed',
        );
        if (failures >= 5) {
          // Give up on this batch: the leases run out and the reaper requeues the deliveries,
          // which are then delivered again with the same webhook-id (at-least-once).
          this.log.error({ dropped: batch.length }, 'dropping results after repeated failures');
          continue;
        }
        this.pending.unshift(...batch);
        await new Promise((r) => setTimeout(r, 200 * failures));
      }
    }
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
        await this.onWritten(next).catch((error: Error) =>
          this.log.error({ errorName: error.name, message: error.message }, 'after-write step failed'),
        );
      }
    })().finally(() => {
      this.followUpRunning = undefined;
    });
  }

  /** Writes everything still waiting, and its follow-ups; resolves when done. */
  async drain(): Promise<void> {
    while (this.flushing || this.pending.length > 0 || this.followUpRunning) {
      this.startFlush();
      await this.flushing;
      await this.followUpRunning;
    }
  }
}
