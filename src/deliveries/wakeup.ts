/**
 * Waking dispatchers when new work is committed. NOTIFY is cheap but serialises commits on a
 * global lock, so producers send at most one per interval (trailing-edge debounce) instead
 * of one per row or request; dispatchers also poll slowly as a safety net.
 */
import type { Sql } from '../db/connect.js';

export const WAKEUP_CHANNEL = 'hookpost_work';

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
    sql`SELECT pg_notify(${WAKEUP_CHANNEL}, '')`.catch(() => {
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
