/**
 * The process's Prometheus metrics: one prom-client Registry per process (never the global
 * one, so tests can build several apps side by side), holding the default Node.js process
 * metrics, the counters and histograms the API and the dispatcher update as they work, and the
 * gauges read from the database at scrape time (database-gauges.ts).
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Sql } from '../db/connect.js';
import type { Logger } from '../log.js';
import { createRetentionMetrics, type RetentionMetrics } from '../retention/metrics.js';
import { createSnapshotCache, registerDatabaseGauges } from './database-gauges.js';

export const ATTEMPT_OUTCOMES = ['success', 'retryable', 'permanent'] as const;

export interface HookpostMetrics {
  registry: Registry;
  deliveriesEnqueued: Counter;
  /** Fan-out messages that reached no endpoint (metrics/unrouted.ts). */
  messagesUnrouted: Counter;
  /** Deliveries not created because the endpoint's content filter did not match (src/filters/). */
  deliveriesFiltered: Counter<'target'>;
  enqueueRejected: Counter<'reason'>;
  deliveryAttempts: Counter<'outcome'>;
  attemptDuration: Histogram;
  deliveryLag: Histogram;
  deadLetters: Counter;
  /** Attempts the egress proxy could not carry (handed back uncharged). */
  proxyUnavailable: Counter;
  /** Retention pass counters and gauges (src/retention/metrics.ts). */
  retention: RetentionMetrics;
}

/**
 * Attempt durations: fine steps where healthy partners answer (5 ms .. 1 s), then the slow-
 * endpoint threshold (2 s) and up to the default 15 s request timeout.
 */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30];
/** Enqueue → delivered: sub-second when healthy, up to hours while retries back off. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 10800];

export interface DatabaseGaugeOptions {
  sql: Sql;
  log: Logger;
  /** How long one snapshot query serves scrapes (HOOKPOST_METRICS_CACHE_SECONDS). */
  maxAgeMs: number;
}

/**
 * A fresh registry with every hookpost metric registered and counting from zero; the
 * database-derived gauges are included when `database` is given.
 */
export function createMetrics(database?: DatabaseGaugeOptions): HookpostMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (database) {
    registerDatabaseGauges(registry, createSnapshotCache(database.sql, database.log, database.maxAgeMs));
  }
  const registers = [registry];
  const metrics: HookpostMetrics = {
    registry,
    deliveriesEnqueued: new Counter({
      name: 'hookpost_deliveries_enqueued_total',
      help: 'Deliveries queued by this process (one per message and target endpoint; repeats excluded).',
      registers,
    }),
    messagesUnrouted: new Counter({
      name: 'hookpost_messages_unrouted_total',
      help:
        'Fan-out messages accepted by this process that no endpoint subscribes to, so nothing is delivered ' +
        '(no labels: tenants and event types are unbounded; GET /v1/pipeline has the per-tenant figure).',
      registers,
    }),
    deliveriesFiltered: new Counter({
      name: 'hookpost_deliveries_filtered_total',
      help:
        "Deliveries not created because the endpoint's content filter did not match the payload, by how the " +
        'enqueue picked the endpoint (fan_out: by subscription; endpoint: named by endpoint_id).',
      labelNames: ['target'],
      registers,
    }),
    enqueueRejected: new Counter({
      name: 'hookpost_enqueue_rejected_total',
      help: 'Enqueue requests refused, by error code (backlog_full, validation_failed, payload_too_large, ...).',
      labelNames: ['reason'],
      registers,
    }),
    deliveryAttempts: new Counter({
      name: 'hookpost_delivery_attempts_total',
      help: 'HTTP delivery attempts recorded by this process, by outcome (success, retryable, permanent).',
      labelNames: ['outcome'],
      registers,
    }),
    attemptDuration: new Histogram({
      name: 'hookpost_delivery_attempt_duration_seconds',
      help: 'Duration of one delivery attempt: connect, request and response.',
      buckets: ATTEMPT_BUCKETS,
      registers,
    }),
    deliveryLag: new Histogram({
      name: 'hookpost_delivery_lag_seconds',
      help: 'Time from enqueue to the recorded successful delivery (replays count from the first enqueue).',
      buckets: LAG_BUCKETS,
      registers,
    }),
    deadLetters: new Counter({
      name: 'hookpost_dead_letters_total',
      help: 'Deliveries this process moved to dead_letter (retries exhausted or a permanent failure).',
      registers,
    }),
    proxyUnavailable: new Counter({
      name: 'hookpost_egress_proxy_unavailable_total',
      help: 'Attempts not sent because HOOKPOST_EGRESS_PROXY was down or refused the tunnel (retried, not charged).',
      registers,
    }),
    retention: createRetentionMetrics(
      registry,
      database ? { sql: database.sql, maxAgeMs: database.maxAgeMs } : undefined,
    ),
  };
  // Every outcome and the backpressure reason exist from the start at 0, so rate() and ratios
  // have a series to work with before the first failure happens.
  for (const outcome of ATTEMPT_OUTCOMES) metrics.deliveryAttempts.inc({ outcome }, 0);
  metrics.enqueueRejected.inc({ reason: 'backlog_full' }, 0);
  for (const target of ['fan_out', 'endpoint']) metrics.deliveriesFiltered.inc({ target }, 0);
  return metrics;
}
