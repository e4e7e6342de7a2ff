/**
 * Feeding the dispatcher's counters and histograms from a stored batch of attempt results.
 * Called once per completion batch: counters move by the batch's tallies (one inc per label,
 * not one per attempt); only the histograms take one observation per attempt.
 */

import { idTimestampMs } from '../ids.js';
import type { CompletedAttempt } from '../queue/complete.js';
import type { HookpostMetrics } from './registry.js';

/**
 * `batch` was written to delivery_attempts in full; `applied` holds the ids whose result also
 * settled the delivery (the lease still held). An attempt counts either way, since it is in the
 * attempt log; a dead letter or a delivery (and its lag) only when it took effect.
 */
export function recordStoredAttempts(
  metrics: HookpostMetrics,
  batch: CompletedAttempt[],
  applied: Set<string>,
  now = Date.now(),
): void {
  const byOutcome = { success: 0, retryable: 0, permanent: 0 };
  let dead = 0;
  for (const attempt of batch) {
    byOutcome[attempt.outcome]++;
    metrics.attemptDuration.observe(attempt.durationMs / 1000);
    if (!applied.has(attempt.deliveryId)) continue;
    if (attempt.status === 'dead_letter') dead++;
    else if (attempt.status === 'delivered') {
      // The delivery id carries its enqueue time (ids are time-ordered), so the lag needs no
      // extra column in the claim and no query.
      const enqueuedAt = idTimestampMs(attempt.deliveryId);
      if (Number.isFinite(enqueuedAt)) metrics.deliveryLag.observe(Math.max(0, now - enqueuedAt) / 1000);
    }
  }
  for (const [outcome, count] of Object.entries(byOutcome)) {
    if (count > 0) metrics.deliveryAttempts.inc({ outcome }, count);
  }
  if (dead > 0) metrics.deadLetters.inc(dead);
}
