/**
 * What follows once a batch of results is stored: 410 Gone disables the endpoint, outcomes move
 * the circuit breakers, and durations feed the latency histograms. A batch holding a retryable
 * failure has its breaker update in the write's own transaction (`withFailures`, used by the
 * CompletionWriter), so a failure's retry and freed max_in_flight slot are never claimable before
 * the circuit has counted it; any other batch's update follows the write (`afterWrite`).
 */
import type { Executor, Sql } from '../db/connect.js';
import { applyOutcomes, type BreakerPolicy, summarizeOutcomes } from '../endpoints/breaker.js';
import { recordLatencies } from '../endpoints/latency.js';
import { type CircuitChange, disableEndpoints } from '../endpoints/lifecycle.js';
import type { Logger } from '../log.js';
import type { CompletedAttempt } from '../queue/complete.js';
import { SECRET_UNAVAILABLE } from './endpoint-cache.js';

export interface OutcomeHandler {
  /** In the results' write transaction; returns the report to make once it is committed. */
  withFailures: (tx: Executor, applied: CompletedAttempt[]) => Promise<() => void>;
  /** After the write, for every batch whose results took effect. */
  afterWrite: (written: CompletedAttempt[]) => Promise<void>;
}

export function createOutcomeHandler(
  sql: Sql,
  policy: BreakerPolicy,
  log: Logger,
  onCircuitChanges: (changes: CircuitChange[]) => void = () => {},
): OutcomeHandler {
  /** Results whose outcome the breaker has already counted (in their write's transaction). */
  const counted = new WeakSet<CompletedAttempt>();
  const report = (changes: CircuitChange[]) => {
    for (const change of changes) log.warn(change, 'circuit state changed');
    if (changes.length > 0) onCircuitChanges(changes);
  };
  // Attempts cut short by our own shutdown say nothing about the endpoint.
  const telling = (results: CompletedAttempt[]) => results.filter((r) => r.errorClass !== 'shutdown');
  const breakers = (executor: Executor, batch: CompletedAttempt[]) =>
    applyOutcomes(
      executor,
      summarizeOutcomes(batch),
      batch.filter((r) => r.outcome === 'retryable').map((r) => r.deliveryId),
      policy,
    );

  return {
    withFailures: async (tx, applied) => {
      const changes = await breakers(tx, telling(applied));
      // Marked only once committed: a batch whose commit failed is written again, and what of it
      // is left then (its failures may have been given up) must still reach the breaker.
      return () => {
        for (const r of applied) counted.add(r);
        report(changes);
      };
    },
    afterWrite: async (written) => {
      const batch = telling(written);
      const gone = [...new Set(batch.filter((r) => r.statusCode === 410).map((r) => r.endpointId))];
      if (gone.length > 0) {
        const disabled = await disableEndpoints(
          sql,
          sql`SELECT unnest(${gone}::text[]) AS id, 'endpoint answered 410 Gone'::text AS reason`,
        );
        if (disabled.length > 0) log.warn({ endpoints: disabled }, 'endpoints disabled after 410 Gone');
      }
      // The breaker update and the latency samples are independent statements, sent together: on
      // a pool of one connection postgres.js pipelines them (one round trip), on a larger one they
      // run side by side. Not on a reserved connection: the request paths keep off them since
      // postgres.js 3.4.9 lost those when the server went away under them (porsager/postgres#1195,
      // #1199).
      const [changes, latencies] = await Promise.allSettled([
        breakers(
          sql,
          batch.filter((r) => !counted.has(r)),
        ),
        // No request was made for these: a 0 ms sample would drag the endpoint's percentiles down.
        recordLatencies(
          sql,
          batch.filter((r) => r.errorClass !== SECRET_UNAVAILABLE),
        ),
      ]);
      if (changes.status === 'rejected') throw changes.reason;
      report(changes.value);
      if (latencies.status === 'rejected') throw latencies.reason;
    },
  };
}
