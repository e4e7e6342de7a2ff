/**
 * Gauges that only the database knows: queue depth by status, the oldest pending delivery,
 * circuit states and endpoint p95. They describe the whole installation, not this process, so
 * every hookpost process reports the same values (aggregate them with max, not sum).
 *
 * A scrape evaluates every gauge's collect() at once; they all await one shared snapshot, and
 * a snapshot is reused for `maxAgeMs`, so N gauges × M scrapers cost one query per interval
 * instead of one per series per scrape.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Sql } from '../db/connect.js';
import { type CircuitState, type QueueSnapshot, readQueueSnapshot } from '../deliveries/stats.js';
import { errorFields, type Logger } from '../log.js';

/** The contract's encoding of circuit_state. */
const CIRCUIT_VALUES: Record<CircuitState, number> = { closed: 0, half_open: 1, open: 2 };

export interface SnapshotCache {
  /** The snapshot, at most `maxAgeMs` old; undefined when the database could not be read. */
  get(): Promise<QueueSnapshot | undefined>;
}

/** Shares one in-flight query between concurrent callers and reuses its result while fresh. */
export function createSnapshotCache(sql: Sql, log: Logger, maxAgeMs: number): SnapshotCache {
  let last: { startedAt: number; value: QueueSnapshot } | undefined;
  let inFlight: Promise<QueueSnapshot | undefined> | undefined;
  return {
    get() {
      if (inFlight) return inFlight;
      if (last && Date.now() - last.startedAt <= maxAgeMs) return Promise.resolve(last.value);
      const startedAt = Date.now();
      inFlight = readQueueSnapshot(sql)
        .then(
          (value) => {
            last = { startedAt, value };
            return value;
          },
          (error: Error) => {
            // The scrape still serves counters and process metrics; the database gauges are
            // left out (absent beats stale), and the next scrape tries again.
            log.warn(errorFields(error), 'metrics snapshot query failed');
            last = undefined;
            return undefined;
          },
        )
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    },
  };
}

/** Registers the database-derived gauges on `registry`, all fed by `cache`. */
export function registerDatabaseGauges(registry: Registry, cache: SnapshotCache): void {
  const registers = [registry];
  new Gauge({
    name: 'hookpost_queue_depth',
    help: 'Deliveries waiting in the queue, by status: pending, failed (awaiting retry), in_flight.',
    labelNames: ['status'],
    registers,
    async collect() {
      const s = await cache.get();
      this.reset();
      if (!s) return;
      this.set({ status: 'pending' }, s.pending);
      this.set({ status: 'failed' }, s.awaitingRetry);
      this.set({ status: 'in_flight' }, s.inFlight);
    },
  });
  new Gauge({
    name: 'hookpost_oldest_pending_age_seconds',
    help: 'Age of the oldest delivery still queued for an enabled endpoint (0 when the queue is empty).',
    registers,
    async collect() {
      const s = await cache.get();
      this.reset();
      if (s) this.set(s.oldestPendingAgeSeconds);
    },
  });
  new Gauge({
    name: 'hookpost_circuit_state',
    help: 'Circuit breaker per live endpoint: 0 closed, 1 half-open, 2 open.',
    labelNames: ['endpoint'],
    registers,
    async collect() {
      const s = await cache.get();
      // Reset first so deleted or disabled endpoints drop out instead of lingering.
      this.reset();
      for (const e of s?.endpoints ?? []) this.set({ endpoint: e.endpointId }, CIRCUIT_VALUES[e.state]);
    },
  });
  new Gauge({
    name: 'hookpost_endpoint_latency_p95_seconds',
    help: 'Attempt duration p95 per endpoint over the last 24 h (endpoints with at least 20 samples).',
    labelNames: ['endpoint'],
    registers,
    async collect() {
      const s = await cache.get();
      this.reset();
      for (const e of s?.endpoints ?? []) {
        if (e.p95Ms !== null) this.set({ endpoint: e.endpointId }, e.p95Ms / 1000);
      }
    },
  });
}
