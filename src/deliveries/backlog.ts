/**
 * Backpressure: enqueue is refused with 503 while more than HOOKPOST_BACKLOG_LIMIT deliveries
 * are due. Counting is cached for a second so that a stream of enqueues costs one count per
 * second, not one per request.
 */
import type { Sql } from '../db/connect.js';

export interface BacklogGuard {
  /** The number of due deliveries, at most `maxAgeMs` old. */
  dueCount(): Promise<number>;
}

export function createBacklogGuard(sql: Sql, maxAgeMs = 1000): BacklogGuard {
  let value = 0;
  let measuredAt = 0;
  let inFlight: Promise<number> | undefined;
  const measure = async () => {
    const [row] = await sql<{ due: number }[]>`
      SELECT count(*)::int AS due FROM delivery_queue
      WHERE lease_expires_at IS NULL AND next_attempt_at <= now()`;
    value = row?.due ?? 0;
    measuredAt = Date.now();
    return value;
  };
  return {
    async dueCount() {
      if (Date.now() - measuredAt <= maxAgeMs) return value;
      inFlight ??= measure().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
  };
}
