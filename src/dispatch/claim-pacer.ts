/**
 * How soon the claim loop claims again after a wake-up. At a steady low rate every enqueue's
 * NOTIFY woke a claim of one or two rows: a statement, a transaction and a round trip each, most
 * of what a delivery cost the dispatcher and the database. Waiting until about `targetRows` rows
 * have arrived (at the rate claims have been finding them), never longer than `lingerMs` after
 * the last claim began, gathers them into one claim for at most that much lag. At higher rates
 * the wait shrinks to nothing (1,000/s: 4 ms); after a quiet spell the last claim is long past,
 * so a lone event is claimed at once. Saturated claims (full batches, rows still due) never come
 * here: the loop claims again at once. Measured in docs/performance.md ("Steady rates").
 */

/** The longest a wake-up waits after the last claim began (ms); the lag it may add. */
export const CLAIM_LINGER_MS = 20;
/** The claim size the wait aims for. */
export const CLAIM_TARGET_ROWS = 4;
/** Waits shorter than this are not worth a timer. */
const MIN_WAIT_MS = 2;

export class ClaimPacer {
  /** Rows per second the recent claims found (about the last second, exponentially weighted). */
  private rate = 0;
  private lastAt: number | undefined;

  constructor(
    private readonly lingerMs = CLAIM_LINGER_MS,
    private readonly targetRows = CLAIM_TARGET_ROWS,
  ) {}

  /** A claim that began at `at` (ms) found `rows` rows. */
  claimed(at: number, rows: number): void {
    if (this.lastAt !== undefined) {
      const elapsed = Math.max(1, at - this.lastAt);
      const weight = Math.min(1, elapsed / 1000);
      this.rate += weight * ((rows * 1000) / elapsed - this.rate);
    }
    this.lastAt = at;
  }

  /** How long a wake-up at `now` should wait before claiming (ms; 0 = claim now). */
  waitAfterWakeUp(now: number): number {
    if (this.lastAt === undefined) return 0;
    const fill = this.rate > 0 ? (this.targetRows * 1000) / this.rate : this.lingerMs;
    const wait = this.lastAt + Math.min(this.lingerMs, fill) - now;
    return wait >= MIN_WAIT_MS ? wait : 0;
  }
}
