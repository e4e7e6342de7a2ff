/**
 * Retention metrics. Counters count what this process's passes removed (sum across instances);
 * the last-run gauges and the database size describe the installation (every dispatcher reports
 * the same values from retention_state and pg_database_size: combine with max).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Sql } from '../db/connect.js';
import type { PassOutcome, RetentionState } from './pass.js';

export interface RetentionMetrics {
  rowsRemoved: Counter<'table'>;
  payloadsExpired: Counter;
  partitionsDropped: Counter;
  runs: Counter<'result'>;
  lastRun: Gauge;
  lastSuccess: Gauge;
  lastDuration: Gauge;
}

export const RETENTION_TABLES = ['deliveries', 'messages', 'delivery_attempts'] as const;

/** Registers the retention metrics; `database` adds hookpost_database_size_bytes, cached for `maxAgeMs`. */
export function createRetentionMetrics(
  registry: Registry,
  database?: { sql: Sql; maxAgeMs: number },
): RetentionMetrics {
  const registers = [registry];
  const metrics: RetentionMetrics = {
    rowsRemoved: new Counter({
      name: 'hookpost_retention_rows_removed_total',
      help: 'Rows the retention passes of this process removed, by table (delivery_attempts: rows of dropped partitions, from the planner estimate for large ones).',
      labelNames: ['table'],
      registers,
    }),
    payloadsExpired: new Counter({
      name: 'hookpost_retention_payloads_expired_total',
      help: 'Message payloads erased by payload expiry in the retention passes of this process.',
      registers,
    }),
    partitionsDropped: new Counter({
      name: 'hookpost_retention_partitions_dropped_total',
      help: 'delivery_attempts partitions dropped whole by the retention passes of this process.',
      registers,
    }),
    runs: new Counter({
      name: 'hookpost_retention_runs_total',
      help: 'Retention passes this process ran, by result (success, failure).',
      labelNames: ['result'],
      registers,
    }),
    lastRun: new Gauge({
      name: 'hookpost_retention_last_run_timestamp_seconds',
      help: 'When the last retention pass of the installation started (Unix seconds; 0 before the first).',
      registers,
    }),
    lastSuccess: new Gauge({
      name: 'hookpost_retention_last_success_timestamp_seconds',
      help: 'When a retention pass of the installation last finished successfully (Unix seconds; 0: never).',
      registers,
    }),
    lastDuration: new Gauge({
      name: 'hookpost_retention_last_duration_seconds',
      help: 'How long the last retention pass of the installation took.',
      registers,
    }),
  };
  for (const table of RETENTION_TABLES) metrics.rowsRemoved.inc({ table }, 0);
  metrics.runs.inc({ result: 'success' }, 0);
  metrics.runs.inc({ result: 'failure' }, 0);
  if (database) registerDatabaseSize(registry, database.sql, database.maxAgeMs);
  return metrics;
}

function registerDatabaseSize(registry: Registry, sql: Sql, maxAgeMs: number): void {
  let last: { at: number; bytes: number } | undefined;
  new Gauge({
    name: 'hookpost_database_size_bytes',
    help: 'pg_database_size of the hookpost database: with retention working it levels off.',
    registers: [registry],
    async collect() {
      if (!last || Date.now() - last.at > maxAgeMs) {
        const rows = await sql<{ bytes: number }[]>`
          SELECT pg_database_size(current_database())::float8 AS bytes`.catch(() => undefined);
        last = rows ? { at: Date.now(), bytes: rows[0]!.bytes } : undefined;
      }
      // Absent rather than stale when the database cannot be read.
      if (last) this.set(last.bytes);
      else this.reset();
    },
  });
}

/** Sets the installation gauges from retention_state. */
export function recordState(metrics: RetentionMetrics, state: RetentionState | undefined): void {
  if (!state) return;
  const seconds = (d: Date | null) => (d ? d.getTime() / 1000 : 0);
  metrics.lastRun.set(seconds(state.last_started_at));
  metrics.lastSuccess.set(seconds(state.last_success_at));
  if (state.last_duration_ms !== null) metrics.lastDuration.set(state.last_duration_ms / 1000);
}

/** Counts what a pass did (not for dry runs) and refreshes the gauges. */
export function recordOutcome(metrics: RetentionMetrics, outcome: PassOutcome): void {
  recordState(metrics, outcome.state);
  if (!outcome.ran || outcome.report.dryRun) return;
  const r = outcome.report;
  metrics.runs.inc({ result: 'success' });
  metrics.rowsRemoved.inc({ table: 'deliveries' }, r.deliveriesRemoved);
  metrics.rowsRemoved.inc({ table: 'messages' }, r.messagesRemoved);
  metrics.rowsRemoved.inc(
    { table: 'delivery_attempts' },
    r.partitionsDropped.reduce((sum, p) => sum + p.rows, 0),
  );
  metrics.partitionsDropped.inc(r.partitionsDropped.length);
  metrics.payloadsExpired.inc(r.payloadsExpired);
}
