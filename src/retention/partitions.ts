/**
 * The attempt log's partitions (delivery_attempts, range-partitioned on started_at by
 * sql/0006): created ahead of time, the pre-partitioning table adopted as a bounded range
 * partition, and whole partitions past retention detached and dropped; never a row DELETE.
 *
 * DDL cannot take bind parameters, so these statements go through `unsafe`: every name and
 * literal in them is built here from a Date (ISO text) or read from the catalog, never from
 * caller input.
 */
import type { Sql } from '../db/connect.js';

export const PARENT = 'delivery_attempts';
/** The CHECK that bounds the pre-partitioning table so it can become a range partition. */
const LEGACY_BOUND = 'delivery_attempts_legacy_bound';
/** How far ahead of now a non-empty legacy table's bound goes: time to VALIDATE it meanwhile. */
const LEGACY_MARGIN_MS = 10 * 60_000;

export interface Partition {
  name: string;
  /** null: MINVALUE (the adopted legacy table). */
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
  /** A DETACH … CONCURRENTLY that was interrupted: it needs FINALIZE. */
  detachPending: boolean;
  /** pg_class.reltuples: an estimate, -1 when never analysed. */
  estimatedRows: number;
}

interface PartitionRow {
  name: string;
  from_at: Date | null;
  to_at: Date | null;
  is_default: boolean;
  detach_pending: boolean;
  reltuples: number;
}

/**
 * The partitions as the catalog has them. Bounds are read from pg_get_expr, whose timestamptz
 * literals carry their UTC offset, so casting them back is exact whatever the session time zone.
 */
export async function listPartitions(sql: Sql): Promise<Partition[]> {
  const rows = await sql<PartitionRow[]>`
    SELECT c.relname AS name,
           pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' AS is_default,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM [(]''([^'']+)''[)]'))[1]::timestamptz AS from_at,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO [(]''([^'']+)''[)]'))[1]::timestamptz AS to_at,
           i.inhdetachpending AS detach_pending,
           c.reltuples::float8 AS reltuples
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = ${PARENT}::regclass
    ORDER BY from_at NULLS FIRST, c.relname`;
  return rows.map((r) => ({
    name: r.name,
    from: r.from_at,
    to: r.to_at,
    isDefault: r.is_default,
    detachPending: r.detach_pending,
    estimatedRows: r.reltuples,
  }));
}

/** The first partition boundary strictly after `ms` (boundaries are multiples of the interval since the epoch). */
export function nextBoundary(ms: number, intervalSeconds: number): number {
  const step = intervalSeconds * 1000;
  return (Math.floor(ms / step) + 1) * step;
}

/** `delivery_attempts_p20261201_000000`: the lower bound in UTC, so names sort by time. */
export function partitionName(from: Date): string {
  const iso = from.toISOString(); // 2026-12-01T00:00:00.000Z
  return `${PARENT}_p${iso.slice(0, 10).replaceAll('-', '')}_${iso.slice(11, 19).replaceAll(':', '')}`;
}

const literal = (d: Date) => `'${d.toISOString()}'`;

/**
 * Where partitions are missing between the current slot and `ahead` slots later: the gaps
 * between existing partitions, cut at interval boundaries. Pure, so the odd cases (a changed
 * interval, the legacy bound falling mid-slot) are easy to reason about.
 */
export function missingRanges(
  existing: { from: Date | null; to: Date | null }[],
  nowMs: number,
  intervalSeconds: number,
  ahead: number,
): { from: Date; to: Date }[] {
  const step = intervalSeconds * 1000;
  let cursor = Math.floor(nowMs / step) * step;
  const end = cursor + (ahead + 1) * step;
  const ranges: { from: Date; to: Date }[] = [];
  const bounded = existing.filter((p) => p.to !== null);
  while (cursor < end) {
    const covering = bounded.find(
      (p) => (p.from === null || p.from.getTime() <= cursor) && p.to!.getTime() > cursor,
    );
    if (covering) {
      cursor = covering.to!.getTime();
      continue;
    }
    const nextStart = Math.min(
      ...bounded.map((p) => p.from?.getTime() ?? Number.NEGATIVE_INFINITY).filter((t) => t > cursor),
      Number.POSITIVE_INFINITY,
    );
    const to = Math.min(nextBoundary(cursor, intervalSeconds), nextStart);
    ranges.push({ from: new Date(cursor), to: new Date(to) });
    cursor = to;
  }
  return ranges;
}

/**
 * Creates the missing partitions up to `ahead` slots past the current one. Each is created as a
 * plain table and then attached: ATTACH takes only SHARE UPDATE EXCLUSIVE on the parent, which
 * does not block the dispatchers' inserts (CREATE TABLE … PARTITION OF would take ACCESS
 * EXCLUSIVE), and checking an empty table's rows against the bound costs nothing.
 */
export async function createPartitionsAhead(
  sql: Sql,
  intervalSeconds: number,
  ahead: number,
  nowMs = Date.now(),
): Promise<string[]> {
  const partitions = await listPartitions(sql);
  // While the pre-partitioning table is still the DEFAULT partition, a new range partition would
  // have to prove it overlaps none of its rows: adoptLegacyPartition() runs first.
  if (partitions.some((p) => p.isDefault)) return [];
  const created: string[] = [];
  for (const range of missingRanges(partitions, nowMs, intervalSeconds, ahead)) {
    const name = partitionName(range.from);
    await sql.unsafe(
      `CREATE TABLE IF NOT EXISTS ${name} (LIKE ${PARENT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`,
    );
    await sql.unsafe(
      `ALTER TABLE ${PARENT} ATTACH PARTITION ${name} FOR VALUES FROM (${literal(range.from)}) TO (${literal(range.to)})`,
    );
    created.push(name);
  }
  return created;
}

/**
 * Turns the pre-partitioning table (attached by 0006 as the DEFAULT partition) into the range
 * partition (MINVALUE, X) for a boundary X slightly in the future, without blocking writes for
 * longer than a catalog change:
 *   1. `CHECK (started_at < X) NOT VALID`: no scan, a brief lock on that table only;
 *   2. `VALIDATE CONSTRAINT`: the one scan, under SHARE UPDATE EXCLUSIVE, so inserts go on;
 *   3. one transaction: DETACH it and ATTACH it with FOR VALUES FROM (MINVALUE) TO (X); the valid
 *      CHECK proves the bound, so PostgreSQL skips the scan it would otherwise do under lock.
 * The partitions from X on are created right after, before X arrives. Returns X, or undefined
 * when there was nothing to adopt.
 */
export async function adoptLegacyPartition(
  sql: Sql,
  intervalSeconds: number,
  nowMs = Date.now(),
): Promise<Date | undefined> {
  const legacy = (await listPartitions(sql)).find((p) => p.isDefault);
  if (!legacy) return undefined;
  const name = legacy.name;
  const [probe] = await sql<{ empty: boolean }[]>`
    SELECT NOT EXISTS (SELECT 1 FROM ${sql(name)} LIMIT 1) AS empty`;
  // An empty table needs no time to validate; a full one gets LEGACY_MARGIN_MS. At least a
  // second either way, so X is not already behind us when step 3 commits.
  const margin = probe!.empty ? 1000 : LEGACY_MARGIN_MS;
  const bound = new Date(nextBoundary(nowMs + margin, intervalSeconds));
  // A bound left by an interrupted adoption may be too close now: start over with a fresh one.
  await sql.unsafe(`ALTER TABLE ${name} DROP CONSTRAINT IF EXISTS ${LEGACY_BOUND}`);
  await sql.unsafe(
    `ALTER TABLE ${name} ADD CONSTRAINT ${LEGACY_BOUND} CHECK (started_at < ${literal(bound)}) NOT VALID`,
  );
  await sql.unsafe(`ALTER TABLE ${name} VALIDATE CONSTRAINT ${LEGACY_BOUND}`);
  if (Date.now() > bound.getTime() - 500) {
    // Validation took longer than the margin: rows at X or later would now be refused. Drop the
    // bound (inserts go on into the DEFAULT partition) and try again on the next pass.
    await sql.unsafe(`ALTER TABLE ${name} DROP CONSTRAINT ${LEGACY_BOUND}`);
    throw new Error('validating the legacy attempt table took longer than its margin; will retry');
  }
  // One transaction, by hand: the pass runs on a reserved connection (it holds the advisory
  // lock), which has no sql.begin().
  await sql.unsafe('BEGIN');
  try {
    await sql.unsafe(`ALTER TABLE ${PARENT} DETACH PARTITION ${name}`);
    await sql.unsafe(
      `ALTER TABLE ${PARENT} ATTACH PARTITION ${name} FOR VALUES FROM (MINVALUE) TO (${literal(bound)})`,
    );
    await sql.unsafe('COMMIT');
  } catch (error) {
    await sql.unsafe('ROLLBACK');
    throw error;
  }
  return bound;
}

/** Partitions entirely before `cutoff` (their upper bound is at or before it). */
export function expiredPartitions(partitions: Partition[], cutoff: Date): Partition[] {
  return partitions.filter((p) => !p.isDefault && p.to !== null && p.to.getTime() <= cutoff.getTime());
}

/** Rows in a partition: the planner's estimate when it has one, else an exact count (small, never analysed). */
export async function partitionRows(sql: Sql, partition: Partition): Promise<number> {
  if (partition.estimatedRows >= 0) return Math.round(partition.estimatedRows);
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::float8 AS n FROM ${sql(partition.name)}`;
  return row!.n;
}

/**
 * Detaches and drops one partition. DETACH … CONCURRENTLY takes only SHARE UPDATE EXCLUSIVE on
 * the parent and waits for queries that may still see the partition, so the dispatchers'
 * inserts never queue behind it; it cannot run inside a transaction block, and postgres.js
 * sends a lone statement outside one. It is refused while a DEFAULT partition exists (before
 * the legacy table is adopted); then a plain DETACH is used. A detach interrupted half-way is
 * finished with FINALIZE. Dropping the detached table then locks nothing anyone uses.
 */
export async function dropPartition(sql: Sql, partition: Partition, hasDefault: boolean): Promise<void> {
  const name = partition.name;
  if (partition.detachPending) await sql.unsafe(`ALTER TABLE ${PARENT} DETACH PARTITION ${name} FINALIZE`);
  else if (hasDefault) await sql.unsafe(`ALTER TABLE ${PARENT} DETACH PARTITION ${name}`);
  else await sql.unsafe(`ALTER TABLE ${PARENT} DETACH PARTITION ${name} CONCURRENTLY`);
  await sql.unsafe(`DROP TABLE ${name}`);
}
