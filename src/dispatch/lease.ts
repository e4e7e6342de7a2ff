/**
 * Whether a claim's lease still covers an attempt. A claimed delivery can wait in the local
 * buffer before it is sent; if its lease ran out mid-attempt another dispatcher could take it
 * over and send it a second time. Why the numbers: docs/architecture.md ("Queue states").
 */

/**
 * True when an attempt started at `now` (ms) can run to its timeout and have its result written
 * before the lease ends at `leaseEndsAt` (ms, local clock, counted from before the claim query so
 * it is never later than the database's expiry). A tenth of the lease, at most a second, is kept
 * for writing the result.
 */
export function leaseCoversAttempt(
  now: number,
  leaseEndsAt: number,
  requestTimeoutMs: number,
  leaseSeconds: number,
): boolean {
  const writeMarginMs = Math.min(1000, (leaseSeconds * 1000) / 10);
  return now + requestTimeoutMs + writeMarginMs <= leaseEndsAt;
}

/**
 * How close to its lease's end (ms) a result must be written before the completion also looks
 * for the rare late success (the reaper took the row back while the result could not be written).
 * Wide, because the local clock can step and a statement can wait before it runs: a result judged
 * on time wrongly is not lost, only its delivery is sent again with the same webhook-id.
 */
export const LATE_RESULT_MARGIN_MS = 5_000;

/** Whether a result written at `now` (ms) may find its claim already taken back by the reaper. */
export function resultMayBeLate(now: number, leaseEndsAt: number): boolean {
  return now + LATE_RESULT_MARGIN_MS >= leaseEndsAt;
}
