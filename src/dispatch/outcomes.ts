/**
 * What follows once a batch of results is stored: 410 Gone disables the endpoint, outcomes move
 * the circuit breakers, and durations feed the latency histograms.
 */
import type { Sql } from '../db/connect.js';
import type { CompletedAttempt } from '../deliveries/queue.js';
import { disableEndpoints } from '../deliveries/queue-state.js';
import { applyOutcomes, type BreakerPolicy, summarizeOutcomes } from '../endpoints/breaker.js';
import { recordLatencies } from '../endpoints/latency.js';
import type { Logger } from '../log.js';
import { SECRET_UNAVAILABLE } from './endpoint-cache.js';

/** A circuit that changed state in this batch. */
export interface CircuitChange {
  endpointId: string;
  from: string;
  to: string;
}

export function createOutcomeHandler(
  sql: Sql,
  policy: BreakerPolicy,
  log: Logger,
  onCircuitChanges: (changes: CircuitChange[]) => void = () => {},
) {
  return async (written: CompletedAttempt[]): Promise<void> => {
    // Attempts cut short by our own shutdown say nothing about the endpoint.
    const batch = written.filter((r) => r.errorClass !== 'shutdown');
    const gone = [...new Set(batch.filter((r) => r.statusCode === 410).map((r) => r.endpointId))];
    if (gone.length > 0) {
      const disabled = await disableEndpoints(
        sql,
        sql`SELECT unnest(${gone}::text[]) AS id, 'endpoint answered 410 Gone'::text AS reason`,
      );
      if (disabled.length > 0) log.warn({ endpoints: disabled }, 'endpoints disabled after 410 Gone');
    }
    const failed = batch.filter((r) => r.outcome === 'retryable').map((r) => r.deliveryId);
    // The breaker update and the latency samples are independent statements, sent together: on a
    // pool of one connection postgres.js pipelines them (one round trip), on a larger one they run
    // side by side. Not on a reserved connection: the request paths keep off them since postgres.js
    // 3.4.9 lost those when the server went away under them (porsager/postgres#1195, #1199).
    const [breakers, latencies] = await Promise.allSettled([
      applyOutcomes(sql, summarizeOutcomes(batch), failed, policy),
      // No request was made for these: a 0 ms sample would drag the endpoint's percentiles down.
      recordLatencies(
        sql,
        batch.filter((r) => r.errorClass !== SECRET_UNAVAILABLE),
      ),
    ]);
    if (breakers.status === 'rejected') throw breakers.reason;
    const changes = breakers.value;
    for (const change of changes) log.warn(change, 'circuit state changed');
    if (changes.length > 0) onCircuitChanges(changes);
    if (latencies.status === 'rejected') throw latencies.reason;
  };
}
