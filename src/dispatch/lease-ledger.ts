/**
 * Which rows this dispatcher holds, by lease token: the tokens of its claims during the last
 * lease, and under each the deliveries it has in memory (in the local buffer, in flight, or with
 * a result not yet stored). A row leased under one of these tokens that is not held is stranded:
 * nobody will send it or write its result before the lease runs out. That happens
 * - when a claim fails after the database committed it (the connection died with the answer):
 *   its rows are leased to a token whose rows never reached memory;
 * - after a failover: the dispatcher commits asynchronously, so the new primary may lack its
 *   last results, and rows whose deliveries were sent and settled here are leased again.
 * Either way the rows are handed back by token as soon as the database answers again, after a
 * claim failed or one of the pools' connections closed, instead of waiting out the lease.
 * Why: docs/architecture.md ("A claim whose answer is lost", "Failover").
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../log.js';
import { releaseStrandedClaims } from '../queue/hand-back.js';

/**
 * At most this many tokens are kept; past it the oldest are left to the reaper. A claim a second
 * for a 60 s lease keeps 60; the bound only matters for a busy dispatcher with a long lease.
 */
const MAX_TOKENS = 10_000;

interface Claim {
  at: number;
  held: Set<string>;
}

export class LeaseLedger {
  private readonly claims = new Map<string, Claim>();
  /** A hand-back is due: a claim failed, or a connection closed (the server may have changed). */
  private due = false;

  constructor(
    /** How long a token's rows can stay leased (HOOKPOST_LEASE_SECONDS, in ms). */
    private readonly leaseMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The token for the claim about to be sent; its rows count as stranded until answered(). */
  next(): string {
    const token = randomUUID();
    this.forgetExpired();
    this.claims.set(token, { at: this.clock(), held: new Set() });
    return token;
  }

  /** The claim's rows are in this process's hands (the local buffer). */
  answered(token: string, deliveryIds: string[]): void {
    const claim = this.claims.get(token);
    if (!claim) return;
    // A claim that leased nothing can strand nothing.
    if (deliveryIds.length === 0) this.claims.delete(token);
    for (const id of deliveryIds) claim.held.add(id);
  }

  /** The claim failed before answered(): if it was committed, its rows are leased to nobody. */
  failed(): void {
    this.due = true;
  }

  /** A pool connection closed: after a failover the new server may lack results written here. */
  reconnected(): void {
    this.due = true;
  }

  /** Results stored: their rows are no longer held here. */
  settled(results: Iterable<{ deliveryId: string; leaseToken: string }>): void {
    for (const r of results) this.claims.get(r.leaseToken)?.held.delete(r.deliveryId);
  }

  /** Deliveries held here now (for tests). */
  get held(): number {
    let n = 0;
    for (const claim of this.claims.values()) n += claim.held.size;
    return n;
  }

  /**
   * When due, hands back every row leased under this process's tokens that it does not hold.
   * Runs in the claim loop, between two claims, so no claim's answer is on its way meanwhile.
   * Throws while the database is away; it stays due.
   */
  async handBack(sql: Sql, log: Logger): Promise<void> {
    if (!this.due) return;
    this.forgetExpired();
    const tokens = [...this.claims.keys()];
    const held: string[] = [];
    for (const claim of this.claims.values()) for (const id of claim.held) held.push(id);
    const released = await releaseStrandedClaims(sql, tokens, held);
    this.due = false;
    if (released > 0)
      log.info({ released }, 'handed back deliveries leased to this dispatcher that it no longer held');
  }

  /** Tokens older than a lease (and the oldest past the bound): the reaper has their rows. */
  private forgetExpired(): void {
    const oldest = this.clock() - this.leaseMs;
    for (const [token, claim] of this.claims) {
      if (claim.at >= oldest && this.claims.size < MAX_TOKENS) break;
      this.claims.delete(token);
    }
  }
}
