/**
 * `hookpost bench --filter-cost`: what deciding filters costs in CPU, in each place it could run
 * (docs/architecture.md, "Filters"), measured on one machine in one session, interleaved:
 *
 * - in PostgreSQL: each payload cast to jsonb once, then `jsonb_path_match` per candidate
 *   endpoint with the filter compiled to a SQL/JSON path (filters/jsonpath.ts);
 * - in the API process: the evaluator (filters/match.ts) on the payload the API has already
 *   parsed, plus what the enqueue statement then does with the verdicts (a bit per pair).
 *
 * Each part is timed against a baseline that does the same work without the filter (same rows,
 * same parameters), and the difference is reported. PostgreSQL's CPU is its backend's run time
 * from /proc/<pid>/schedstat (nanoseconds), the API's is this process's CPU time: CPU, not wall
 * time, because the machine is shared and rates swing with the neighbours.
 */
import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { connect, type Sql } from '../db/connect.js';
import { openDatabase } from '../db/database.js';
import { toJsonPath } from '../filters/jsonpath.js';
import { type Condition, MAX_FILTER_BYTES, parseFilter } from '../filters/syntax.js';
import type { Logger } from '../log.js';
import { HALF_FILTER, orderEventOf } from './filter-load.js';
import { matches } from './filter-match.js';

export interface FilterCostOptions {
  /** Events per round. */
  n: number;
  rounds: number;
  payloadBytes: number;
}

/** Items per enqueue batch: the largest batch the API takes, as in `bench`. */
const BATCH = 1000;

/** Nanoseconds the backend `pid` has run on a CPU so far. */
function backendNanoseconds(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

const ownNanoseconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
};

interface Workload {
  name: string;
  texts: string[];
  parsed: unknown[];
  conditions: (Condition | null)[];
  paths: string[];
}

/** A filter of about 16 KiB that never matches and makes every clause look at every item. */
function hostileFilter(): Record<string, unknown> {
  const clauses: unknown[] = [];
  for (let i = 0; ; i++) {
    const next = [...clauses, { data: { items: { sku: `no-such-sku-${i}` } } }];
    if (Buffer.byteLength(JSON.stringify({ $or: next })) > MAX_FILTER_BYTES) break;
    clauses.push(next.at(-1));
  }
  return { $or: clauses };
}

function workload(name: string, filter: Record<string, unknown>, filters: number, opts: FilterCostOptions) {
  const texts = Array.from({ length: opts.n }, (_, i) => orderEventOf(i, opts.payloadBytes));
  const conditions = Array.from({ length: filters }, () => parseFilter(filter).condition);
  return {
    name,
    texts,
    parsed: texts.map((t) => JSON.parse(t)),
    conditions,
    paths: conditions.map((c) => toJsonPath(c) ?? 'true'),
  } satisfies Workload;
}

/** The batches of a workload: what one enqueue statement would carry. */
function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += BATCH) out.push(items.slice(i, i + BATCH));
  return out;
}

/** Backend nanoseconds the queries took (sent one after another on the one connection). */
async function timedInBackend(pid: number, run: () => Promise<unknown>): Promise<number> {
  const before = backendNanoseconds(pid);
  await run();
  return backendNanoseconds(pid) - before;
}

/** In PostgreSQL: cast once per payload, one jsonb_path_match per (payload, filter). */
async function inDatabase(sql: Sql, pid: number, w: Workload, filtered: boolean) {
  return timedInBackend(pid, async () => {
    for (const texts of batches(w.texts)) {
      if (filtered)
        await sql`
          SELECT count(*) FROM (SELECT p::jsonb AS d FROM unnest(${texts}::text[]) p OFFSET 0) m,
            unnest(${w.paths}::jsonpath[]) f
          WHERE jsonb_path_match(m.d, f)`;
      else
        await sql`
          SELECT count(*) FROM (SELECT p AS d FROM unnest(${texts}::text[]) p OFFSET 0) m,
            unnest(${w.paths}::text[]) f
          WHERE m.d IS NOT NULL AND f IS NOT NULL`;
    }
  });
}

/** In PostgreSQL, the cast alone (to tell it from the path evaluation). */
async function castOnly(sql: Sql, pid: number, w: Workload, cast: boolean) {
  return timedInBackend(pid, async () => {
    for (const texts of batches(w.texts)) {
      if (cast)
        await sql`SELECT count(*) FROM (SELECT p::jsonb AS d FROM unnest(${texts}::text[]) p OFFSET 0) m WHERE m.d IS NOT NULL`;
      else
        await sql`SELECT count(*) FROM (SELECT p AS d FROM unnest(${texts}::text[]) p OFFSET 0) m WHERE m.d IS NOT NULL`;
    }
  });
}

/** In the API: the verdicts for one batch, one bit string per filter ('1' = deliver). */
function verdicts(parsed: unknown[], conditions: (Condition | null)[]): string[] {
  return conditions.map((c) => {
    let bits = '';
    for (const payload of parsed) bits += matches(c, payload) ? '1' : '0';
    return bits;
  });
}

/** In the API process: this process's CPU for the verdicts of every batch. */
function inProcess(w: Workload): { ns: number; bits: string[][] } {
  const before = ownNanoseconds();
  const bits = batches(w.parsed).map((parsed) => verdicts(parsed, w.conditions));
  return { ns: ownNanoseconds() - before, bits };
}

/**
 * What the enqueue statement does with the API's verdicts: reads them (a varbit per filter, the
 * baseline sends none) and tests one bit per (payload, filter).
 */
async function verdictLookups(sql: Sql, pid: number, w: Workload, bits: string[][], lookup: boolean) {
  return timedInBackend(pid, async () => {
    for (const [b, texts] of batches(w.texts).entries()) {
      const ords = texts.map((_, i) => i);
      if (lookup)
        await sql`
          SELECT count(*) FROM unnest(${ords}::int[]) m(ord), unnest(${bits[b]!}::varbit[]) v(bits)
          WHERE get_bit(v.bits, m.ord) = 1`;
      else
        await sql`
          SELECT count(*) FROM unnest(${ords}::int[]) m(ord), generate_series(1, ${bits[b]!.length}) v(bits)
          WHERE m.ord >= 0 AND v.bits > 0`;
    }
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Figures {
  cast: number[];
  database: number[];
  process: number[];
  lookups: number[];
}

/** One round of every measurement, in an order that alternates between rounds (ABBA). */
async function round(sql: Sql, pid: number, w: Workload, flip: boolean, into: Figures) {
  const steps: (() => Promise<void>)[] = [
    async () => {
      const base = await castOnly(sql, pid, w, false);
      into.cast.push((await castOnly(sql, pid, w, true)) - base);
      const plain = await inDatabase(sql, pid, w, false);
      into.database.push((await inDatabase(sql, pid, w, true)) - plain);
    },
    async () => {
      const { ns, bits } = inProcess(w);
      into.process.push(ns);
      const base = await verdictLookups(sql, pid, w, bits, false);
      into.lookups.push((await verdictLookups(sql, pid, w, bits, true)) - base);
    },
  ];
  for (const step of flip ? steps.reverse() : steps) await step();
}

const fmt = (x: number, digits = 2) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Runs the measurement and prints µs per event for each place; returns the exit code. */
export async function runFilterCost(config: Config, log: Logger, opts: FilterCostOptions): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const database = await openDatabase(config, log);
  const sql = connect(database.url, { max: 1 });
  try {
    const [backend] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const pid = backend!.pid;
    try {
      backendNanoseconds(pid);
    } catch {
      out(
        'hookpost bench --filter-cost: the database backend is not a process on this machine (its CPU is read from /proc)',
      );
      return 1;
    }
    const workloads = [
      workload('5 endpoints with a three-clause filter', HALF_FILTER, 5, opts),
      workload('100 endpoints with a three-clause filter', HALF_FILTER, 100, opts),
      workload('1 endpoint with a 16 KiB filter of 1 key in an array per clause', hostileFilter(), 1, opts),
    ];
    out(
      `hookpost bench --filter-cost: ${opts.n} events of ${opts.payloadBytes} bytes per round, ` +
        `${opts.rounds} interleaved rounds, batches of ${BATCH}; CPU µs per event (median of rounds)`,
    );
    for (const w of workloads) {
      const figures: Figures = { cast: [], database: [], process: [], lookups: [] };
      await round(sql, pid, w, false, { cast: [], database: [], process: [], lookups: [] }); // warm-up
      for (let r = 0; r < opts.rounds; r++) await round(sql, pid, w, r % 2 === 1, figures);
      const perEvent = (ns: number[]) => median(ns) / 1000 / opts.n;
      const db = perEvent(figures.database);
      const api = perEvent(figures.process) + perEvent(figures.lookups);
      out(`  ${w.name}:`);
      out(
        `    in PostgreSQL  ${fmt(db)} µs  (cast to jsonb ${fmt(perEvent(figures.cast))}, ` +
          `paths ${fmt(db - perEvent(figures.cast))}: ${fmt(((db - perEvent(figures.cast)) * 1000) / w.conditions.length, 0)} ns per filter)`,
      );
      out(
        `    in the API     ${fmt(api)} µs  (evaluation ${fmt(perEvent(figures.process))}: ` +
          `${fmt((perEvent(figures.process) * 1000) / w.conditions.length, 0)} ns per filter; ` +
          `the statement's bit lookups ${fmt(perEvent(figures.lookups))} in PostgreSQL)`,
      );
    }
    return 0;
  } finally {
    await sql.end();
    await database.stop();
  }
}
