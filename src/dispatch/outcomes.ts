/**
 * What follows once a batch of results is stored: 410 Gone disables the endpoint, outcomes move
 * the circuit breakers, and durations feed the latency histograms.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { type CompletedAttempt, disableEndpoints } from '../deliveries/queue.js';
import { applyOutcomes, summarizeOutcomes } from '../endpoints/breaker.js';
import { recordLatencies } from '../endpoints/latency.js';
import type { Logger } from '../log.js';
import { SECRET_UNAVAILABLE } from './endpoint-cache.js';
import { breakerPolicy } from './maintenance.js';

export function createOutcomeHandler(sql: Sql, config: Config, log: Logger) {
  const policy = breakerPolicy(config);
  return async (written: CompletedAttempt[]): Promise<void> => {
    // Attempts cut short by our own shutdown say nothing about the endpoint.
    const batch = written.filter((r) => r.errorClass !== 'shutdown');
    const gone = [...new Set(batch.filter((r) => r.statusCode === 410).map((r) => r.endpointId))];
    if (gone.length > 0) {
      await disableEndpoints(sql, gone, 'endpoint answered 410 Gone');
      log.warn({ endpoints: gone }, 'endpoints disabled after 410 Gone');
    }
    const failed = batch.filter((r) => r.outcome === 'retryable').map((r) => r.deliveryId);
    const changes = await applyOutcomes(sql, summarizeOutcomes(batch), failed, policy);
    for (const change of changes) log.warn(change, 'circuit state changed');
    // No request was made for these: a 0 ms sample would drag the endpoint's percentiles down.
    await recordLatencies(
      sql,
      batch.filter((r) => r.errorClass !== SECRET_UNAVAILABLE),
    );
  };
}
