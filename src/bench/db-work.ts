/**
 * What the database did for a timed phase of `hookpost bench`, per delivery: transactions (from
 * pg_stat_database, always there) and, where the server has pg_stat_statements loaded
 * (shared_preload_libraries), statements and their execution time, the busiest first. At a
 * steady low rate the CPU per delivery is mostly per-statement and per-round-trip work (each
 * statement is a socket write and a wake-up on both sides), so these counts say where it goes.
 */
import type { Sql } from '../db/connect.js';

interface StatementRow {
  queryid: string;
  query: string;
  calls: number;
  ms: number;
  /** Planning time (pg_stat_statements.track_planning on; else 0). */
  planMs: number;
}

interface Reading {
  transactions: number;
  statements: Map<string, StatementRow> | undefined;
}

export interface DbWork {
  /** Ends the phase; the lines to print (already indented by the caller). */
  stop(deliveries: number): Promise<string[]>;
}

const fmt = (x: number, digits = 2) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function read(sql: Sql, withStatements: boolean): Promise<Reading> {
  const [db] = await sql<{ n: string }[]>`
    SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`;
  if (!withStatements) return { transactions: Number(db?.n ?? 0), statements: undefined };
  const rows = await sql<StatementRow[]>`
    SELECT s.queryid::text AS queryid, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 90) AS query,
           s.calls::int AS calls, s.total_exec_time AS ms, s.total_plan_time AS "planMs"
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = current_database()`;
  return { transactions: Number(db?.n ?? 0), statements: new Map(rows.map((r) => [r.queryid, r])) };
}

/** Starts counting; pg_stat_statements is used when the server has it loaded. */
export async function startDbWork(sql: Sql): Promise<DbWork> {
  const withStatements = await sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`
    .then(() => sql`SELECT 1 FROM pg_stat_statements LIMIT 1`)
    .then(
      () => true,
      () => false,
    );
  const before = await read(sql, withStatements);
  return {
    async stop(deliveries) {
      const after = await read(sql, withStatements);
      const per = (n: number) => fmt(n / Math.max(1, deliveries));
      const lines = [`transactions ${per(after.transactions - before.transactions)} per delivery`];
      if (!after.statements) {
        lines.push('(statement counts need pg_stat_statements in shared_preload_libraries)');
        return lines;
      }
      const deltas = [...after.statements.values()]
        .map((r) => {
          const was = before.statements?.get(r.queryid);
          return {
            ...r,
            calls: r.calls - (was?.calls ?? 0),
            ms: r.ms - (was?.ms ?? 0),
            planMs: r.planMs - (was?.planMs ?? 0),
          };
        })
        .filter((r) => r.calls > 0 && !/pg_stat_statements|pg_stat_database|pg_stat_activity/.test(r.query))
        .sort((a, b) => b.calls - a.calls);
      const calls = deltas.reduce((t, r) => t + r.calls, 0);
      const ms = deltas.reduce((t, r) => t + r.ms, 0);
      const planMs = deltas.reduce((t, r) => t + r.planMs, 0);
      const us = (x: number, n: number) => fmt((x * 1000) / Math.max(1, n), 1);
      lines.push(
        `statements ${per(calls)} per delivery, executing ${us(ms, deliveries)} µs` +
          (planMs > 0 ? `, planning ${us(planMs, deliveries)} µs` : '') +
          ' (per delivery; then per call: calls per delivery, execute µs, plan µs, statement)',
      );
      for (const r of deltas.slice(0, 14))
        lines.push(
          `  ${per(r.calls).padStart(6)}  ${us(r.ms, r.calls).padStart(8)}  ${us(r.planMs, r.calls).padStart(8)}  ${r.query}`,
        );
      return lines;
    },
  };
}
