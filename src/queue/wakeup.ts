/**
 * Waking dispatchers when new work is committed, the only place that sends on their channel.
 * NOTIFY is cheap but serialises commits on a global lock, so the enqueue path, which can send
 * thousands a second, goes through a Waker: at most one NOTIFY per interval (trailing-edge
 * debounce), sent inside the enqueue's transaction when one is due at once. Rarer producers
 * (a replay batch, an unheld key's head, an operational event) send one in their own
 * transaction with wakeDispatchersOnCommit / wakeDispatchersAtCommit. Dispatchers also poll
 * slowly as a safety net.
 */
import type { Executor, Fragment, Sql } from '../db/connect.js';

export const WAKEUP_CHANNEL = 'hookpost_work';

/**
 * A scalar SQL expression that wakes every dispatcher when the caller's transaction commits
 * (NOTIFY is delivered at commit, never on rollback). Evaluate it once per statement, e.g. as an
 * uncorrelated subquery, only when there is work.
 */
export function wakeDispatchersAtCommit(sql: Executor): Fragment {
  return sql`pg_notify(${WAKEUP_CHANNEL}, '')`;
}

/**
 * A scalar SQL expression for a statement that may have made rows due (a CTE `rows`, e.g. an
 * unpark's): wakes the dispatchers at commit when it has any row, else sends nothing.
 */
export function wakeDispatchersIfAny(sql: Executor, rows: Fragment): Fragment {
  return sql`(SELECT count(*) FROM (SELECT ${wakeDispatchersAtCommit(sql)} FROM ${rows} LIMIT 1) woken)`;
}

/** Wakes the dispatchers when the transaction `tx` commits: one statement. */
export async function wakeDispatchersOnCommit(tx: Executor): Promise<void> {
  await tx`SELECT ${wakeDispatchersAtCommit(tx)}`;
}

export interface Waker {
  /** Asks for a wake-up notification soon; calls within one interval share one NOTIFY. */
  poke(): void;
  /**
   * Whether the caller should send the next notification itself, inside the transaction that
   * writes the work (NOTIFY is delivered at its commit): true when one is due now (none sent in
   * the last interval, none scheduled), and then it counts as sent. At low rates this spares the
   * separate NOTIFY statement, a round trip per request; under load the debounce stays as it was.
   */
  takeForCommit(): boolean;
  close(): void;
}

/** What the enqueue routes need of a Waker. */
export type WakeUps = Pick<Waker, 'poke' | 'takeForCommit'>;

/** For an API without dispatchers to wake (tests of the routes alone). */
export const NO_WAKE_UPS: WakeUps = { poke: () => {}, takeForCommit: () => false };

export function createWaker(sql: Sql, intervalMs = 5): Waker {
  let timer: NodeJS.Timeout | undefined;
  let lastSent = 0;
  const send = () => {
    timer = undefined;
    lastSent = Date.now();
    sql`SELECT ${wakeDispatchersAtCommit(sql)}`.catch(() => {
      // Best effort: the dispatchers' poll picks the work up anyway.
    });
  };
  return {
    poke() {
      if (timer) return;
      const wait = Math.max(0, lastSent + intervalMs - Date.now());
      if (wait === 0) send();
      else timer = setTimeout(send, wait);
    },
    takeForCommit() {
      if (timer || Date.now() < lastSent + intervalMs) return false;
      lastSent = Date.now();
      return true;
    },
    close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
