/**
 * The lease tokens of claims whose answer may have been lost. The dispatcher picks each
 * claim's token before sending it; if the claim fails, the database may still have committed it
 * (the connection died after the commit), leaving rows leased to a process that does not know it
 * holds them. Those rows are handed back by token as soon as the database answers again, instead
 * of waiting out the lease. Why: docs/architecture.md ("A claim whose answer is lost").
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import { releaseUnansweredClaims } from '../deliveries/queue.js';
import type { Logger } from '../log.js';

/**
 * At most this many tokens are kept; past it the oldest are left to the reaper (an outage long
 * enough to fill it outlasts their leases anyway).
 */
const MAX_KEPT = 64;

export class UnansweredClaims {
  private kept: string[] = [];
  private current: string | undefined;

  /** The token for the claim about to be sent; kept by `failed()` until `answered()`. */
  next(): string {
    this.current = randomUUID();
    return this.current;
  }

  /** The claim's rows are in this process's hands (or there were none): nothing to hand back. */
  answered(): void {
    this.current = undefined;
  }

  /** Something failed before `answered()`: if a claim was sent, its rows may be leased to nobody. */
  failed(): void {
    if (this.current) this.kept.push(this.current);
    this.current = undefined;
    if (this.kept.length > MAX_KEPT) this.kept.shift();
  }

  /** Hands back every row still leased under a kept token; throws (keeping them) while the database is away. */
  async handBack(sql: Sql, log: Logger): Promise<void> {
    if (this.kept.length === 0) return;
    const released = await releaseUnansweredClaims(sql, this.kept);
    this.kept = [];
    if (released > 0) log.info({ released }, 'handed back deliveries of claims whose answer was lost');
  }
}
