/**
 * Batches attempt results into one completeAttempts() statement per flush: a flush starts when
 * `maxBatch` results are waiting or `delayMs` after the first one, and only one runs at a time,
 * so under load results coalesce into large batches and at low load they are written at once.
 */
import type { Sql } from '../db/connect.js';
import { type CompletedAttempt, completeAttempts } from '../deliveries/queue.js';
import type { Logger } from '../log.js';

export class CompletionWriter {
  private pending: CompletedAttempt[] = [];
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly onWritten: (batch: CompletedAttempt[], applied: Set<string>) => Promise<void> | void,
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
        if (applied.size < batch.length) {
          this.log.warn(
            { lost: batch.length - applied.size },
            'results for deliveries whose lease was taken over were not applied',
          );
        }
        // Follow-up work (breakers, latency) failing must not re-write stored results.
        await Promise.resolve(this.onWritten(batch, applied)).catch((error: Error) =>
          this.log.error({ errorName: error.name, message: error.message }, 'after-write step failed'),
        );
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

  /** Writes everything still waiting; resolves when done. */
  async drain(): Promise<void> {
    while (this.flushing || this.pending.length > 0) {
      this.startFlush();
      await this.flushing;
    }
  }
}
