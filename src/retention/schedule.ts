/**
 * The retention pass on a timer in every dispatcher (src/dispatch/maintenance.ts). Every process
 * tries every interval; the advisory lock and retention_state make exactly one of them run it,
 * and the others only refresh their gauges from what it recorded.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { errorFields, type Logger } from '../log.js';
import { type RetentionMetrics, recordOutcome, recordState } from './metrics.js';
import { type RetentionPolicy, readState, runRetentionPass } from './pass.js';

export function retentionPolicy(config: Config): RetentionPolicy {
  return {
    retentionDays: config.retentionDays,
    payloadRetentionDays: config.payloadRetentionDays,
    partitionIntervalSeconds: config.partitionIntervalSeconds,
    partitionsAhead: config.partitionsAhead,
    batchSize: config.retentionBatchSize,
    pauseMs: config.retentionPauseMs,
  };
}

/** Starts the timer (first pass right away: partitions must exist before attempts land); returns a stopper. */
export function startRetention(
  sql: Sql,
  config: Config,
  log: Logger,
  metrics?: RetentionMetrics,
): () => void {
  const policy = retentionPolicy(config);
  let stopped = false;
  let running = false;
  const run = async () => {
    if (running || stopped) return;
    running = true;
    try {
      const outcome = await runRetentionPass(sql, policy, {
        // A little under the interval, so timers that drift apart do not skip a whole round.
        minIntervalSeconds: config.retentionIntervalSeconds * 0.9,
        shouldStop: () => stopped,
      });
      if (metrics) recordOutcome(metrics, outcome);
      if (outcome.ran) {
        const r = outcome.report;
        if (r.partitionsDropped.length + r.deliveriesRemoved + r.messagesRemoved + r.payloadsExpired > 0)
          log.info(
            {
              partitionsCreated: r.partitionsCreated.length,
              partitionsDropped: r.partitionsDropped.length,
              deliveriesRemoved: r.deliveriesRemoved,
              messagesRemoved: r.messagesRemoved,
              payloadsExpired: r.payloadsExpired,
              durationMs: r.durationMs,
            },
            'retention pass',
          );
      }
    } catch (error) {
      metrics?.runs.inc({ result: 'failure' });
      if (metrics) recordState(metrics, await readState(sql).catch(() => undefined));
      if (!stopped) log.error({ task: 'retention', ...errorFields(error) }, 'maintenance failed');
    } finally {
      running = false;
    }
  };
  const first = setTimeout(run, 0);
  const timer = setInterval(run, config.retentionIntervalSeconds * 1000);
  return () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(timer);
  };
}
