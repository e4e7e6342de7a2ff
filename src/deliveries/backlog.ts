/**
 * Backpressure: enqueue is refused with 503 while more than HOOKPOST_BACKLOG_LIMIT deliveries
 * are due. The count is cached, so a stream of enqueues costs one count per interval, not one
 * per request, and it is bounded twice, because counting reads every due row: it stops at the
 * limit (rows beyond it change nothing), and the interval grows with what a count costs, so
 * that counting takes at most ~2% of one server backend however deep the backlog. A count of a
 * million due rows takes ~130 ms; counted every second, that was 13% of a core per API process.
 */
import type { Sql } from '../db/connect.js';

export interface BacklogGuard {
  /** The number of due deliveries, counted up to the limit + 1, from a recent enough count. */
  dueCount(): Promise<number>;
}

/** The shortest time between two counts (ms). */
const MIN_INTERVAL_MS = 1000;
/** The share of time the counting may take (of one backend). */
const COUNT_BUDGET = 0.02;

/** How long a count that took `tookMs` stays good: at least a second, else 50× its cost. */
export function countIntervalMs(tookMs: number): number {
  return Math.max(MIN_INTERVAL_MS, tookMs / COUNT_BUDGET);
}

export function createBacklogGuard(sql: Sql, limit: number): BacklogGuard {
  let value = 0;
  let goodUntil = 0;
  let inFlight: Promise<number> | undefined;
  const measure = async () => {
    const started = performance.now();
    const [row] = await sql<{ due: number }[]>`
      SELECT count(*)::int AS due FROM (
        SELECT 1 FROM delivery_queue
        WHERE state = 'scheduled' AND next_attempt_at <= now()
        LIMIT ${limit + 1}
      ) due`;
    value = row?.due ?? 0;
    goodUntil = Date.now() + countIntervalMs(performance.now() - started);
    return value;
  };
  return {
    async dueCount() {
      if (Date.now() <= goodUntil) return value;
      inFlight ??= measure().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
  };
}
