/**
 * One retention pass: partitions (adopt the legacy table, create ahead, drop expired), payload
 * expiry, then removal of settled deliveries and messages in small batches. One at a time across
 * every process: the pass holds a session advisory lock on a reserved connection, and another
 * process that finds it taken skips this round. The outcome is recorded in retention_state, so
 * every dispatcher can report the installation's last success, and a process that finds a pass
 * finished less than an interval ago skips too (the dispatchers' timers are not in step).
 */
import type { Sql } from '../db/connect.js';
import {
  adoptLegacyPartition,
  createPartitionsAhead,
  dropPartition,
  expiredPartitions,
  listPartitions,
  partitionRows,
} from './partitions.js';
import { ensurePayloadIndex } from './payload-index.js';
import { countDue, cutoffId, expirePayloadsBatch, removeSettledBatch } from './rows.js';

/** Arbitrary constant shared by every hookpost process: the key of the retention lock. */
export const RETENTION_LOCK_KEY = 727_274_006;
const DAY_SECONDS = 86_400;

export interface RetentionPolicy {
  retentionDays: number;
  payloadRetentionDays: number;
  partitionIntervalSeconds: number;
  partitionsAhead: number;
  batchSize: number;
  pauseMs: number;
}

export interface RetentionReport {
  dryRun: boolean;
  partitionsCreated: string[];
  /** Dropped (or, in a dry run, that would be), with their row counts (estimates for big ones). */
  partitionsDropped: { name: string; rows: number }[];
  deliveriesRemoved: number;
  messagesRemoved: number;
  payloadsExpired: number;
  snippetsErased: number;
  durationMs: number;
}

export interface RetentionState {
  last_started_at: Date | null;
  last_finished_at: Date | null;
  last_success_at: Date | null;
  last_duration_ms: number | null;
  last_error: string | null;
}

export type PassOutcome =
  | { ran: true; report: RetentionReport; state: RetentionState }
  | { ran: false; reason: 'busy' | 'not_due'; state: RetentionState | undefined };

export interface PassOptions {
  dryRun?: boolean;
  /** Run even if a pass finished less than `minIntervalSeconds` ago (the CLI). */
  force?: boolean;
  minIntervalSeconds?: number;
  /** Checked between batches: stop early (shutdown). */
  shouldStop?: () => boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function readState(sql: Sql): Promise<RetentionState | undefined> {
  const [row] = await sql<RetentionState[]>`
    SELECT last_started_at, last_finished_at, last_success_at, last_duration_ms, last_error
    FROM retention_state WHERE id = 1`;
  return row;
}

/** Runs the pass unless another process is running it or ran it within the interval. */
export async function runRetentionPass(
  sql: Sql,
  policy: RetentionPolicy,
  options: PassOptions = {},
): Promise<PassOutcome> {
  const conn = await sql.reserve();
  try {
    const [lock] = await conn<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${RETENTION_LOCK_KEY}) AS ok`;
    if (!lock!.ok) return { ran: false, reason: 'busy', state: await readState(conn) };
    try {
      const before = await readState(conn);
      const minInterval = options.minIntervalSeconds ?? 0;
      if (
        !options.force &&
        before?.last_finished_at &&
        Date.now() - before.last_finished_at.getTime() < minInterval * 1000
      ) {
        return { ran: false, reason: 'not_due', state: before };
      }
      // Waiting long for a lock here would make the dispatchers' statements queue behind ours.
      await conn`SET lock_timeout = '2s'`;
      if (options.dryRun) {
        const report = await dryRun(conn, policy);
        return { ran: true, report, state: before! };
      }
      await conn`UPDATE retention_state SET last_started_at = now() WHERE id = 1`;
      const started = Date.now();
      let report: RetentionReport;
      try {
        report = await execute(conn, policy, options.shouldStop ?? (() => false));
        report.durationMs = Date.now() - started;
        await conn`
          UPDATE retention_state SET last_finished_at = now(), last_success_at = now(),
            last_duration_ms = ${report.durationMs}, last_error = NULL,
            last_result = ${conn.json(report as never)}
          WHERE id = 1`;
      } catch (error) {
        await conn`
          UPDATE retention_state SET last_finished_at = now(), last_duration_ms = ${Date.now() - started},
            last_error = ${`${(error as Error).name}: ${(error as Error).message}`.slice(0, 500)}
          WHERE id = 1`.catch(() => {});
        throw error;
      }
      return { ran: true, report, state: (await readState(conn))! };
    } finally {
      await conn`RESET lock_timeout`.catch(() => {});
      await conn`SELECT pg_advisory_unlock(${RETENTION_LOCK_KEY})`.catch(() => {});
    }
  } finally {
    conn.release();
  }
}

function emptyReport(dryRun: boolean): RetentionReport {
  return {
    dryRun,
    partitionsCreated: [],
    partitionsDropped: [],
    deliveriesRemoved: 0,
    messagesRemoved: 0,
    payloadsExpired: 0,
    snippetsErased: 0,
    durationMs: 0,
  };
}

async function execute(
  sql: Sql,
  policy: RetentionPolicy,
  shouldStop: () => boolean,
): Promise<RetentionReport> {
  const report = emptyReport(false);
  const retentionSeconds = policy.retentionDays * DAY_SECONDS;

  // Partitions first: the ones ahead must exist before the attempts that will land in them.
  const adoptedUntil = await adoptLegacyPartition(sql, policy.partitionIntervalSeconds);
  if (adoptedUntil) report.partitionsCreated.push(`(legacy table bounded at ${adoptedUntil.toISOString()})`);
  report.partitionsCreated.push(
    ...(await createPartitionsAhead(sql, policy.partitionIntervalSeconds, policy.partitionsAhead)),
  );
  const { at: attemptCutoff } = await cutoffId(sql, '', retentionSeconds);
  const partitions = await listPartitions(sql);
  const hasDefault = partitions.some((p) => p.isDefault);
  for (const partition of expiredPartitions(partitions, attemptCutoff)) {
    if (shouldStop()) return report;
    const rows = await partitionRows(sql, partition);
    await dropPartition(sql, partition, hasDefault);
    report.partitionsDropped.push({ name: partition.name, rows });
  }

  // Payloads, then rows: with the default (payload window = retention) the rows go anyway, and
  // erasing them first would be wasted writes, so expiry only runs when its window is shorter.
  if (policy.payloadRetentionDays < policy.retentionDays) {
    await ensurePayloadIndex(sql);
    const { id: expireCutoff } = await cutoffId(sql, 'msg_', policy.payloadRetentionDays * DAY_SECONDS);
    let after = '';
    for (;;) {
      if (shouldStop()) return report;
      const batch = await expirePayloadsBatch(sql, after, expireCutoff, policy.batchSize);
      report.payloadsExpired += batch.payloads;
      report.snippetsErased += batch.snippets;
      if (batch.lastId === null) break;
      after = batch.lastId;
      await sleep(policy.pauseMs);
    }
  }

  const { id: removeCutoff } = await cutoffId(sql, 'msg_', retentionSeconds);
  let after = '';
  for (;;) {
    if (shouldStop()) return report;
    const batch = await removeSettledBatch(sql, after, removeCutoff, policy.batchSize);
    report.deliveriesRemoved += batch.deliveries;
    report.messagesRemoved += batch.messages;
    if (batch.lastId === null) break;
    after = batch.lastId;
    await sleep(policy.pauseMs);
  }
  return report;
}

async function dryRun(sql: Sql, policy: RetentionPolicy): Promise<RetentionReport> {
  const report = emptyReport(true);
  const retentionSeconds = policy.retentionDays * DAY_SECONDS;
  const { at: attemptCutoff, id: removeCutoff } = await cutoffId(sql, 'msg_', retentionSeconds);
  const partitions = await listPartitions(sql);
  for (const partition of expiredPartitions(partitions, attemptCutoff)) {
    report.partitionsDropped.push({ name: partition.name, rows: await partitionRows(sql, partition) });
  }
  const { id: expireCutoff } = await cutoffId(
    sql,
    'msg_',
    Math.min(policy.payloadRetentionDays, policy.retentionDays) * DAY_SECONDS,
  );
  const due = await countDue(sql, removeCutoff, expireCutoff);
  report.deliveriesRemoved = due.deliveries;
  report.messagesRemoved = due.messages;
  // Payloads of messages that the removal takes anyway are not counted twice.
  report.payloadsExpired = policy.payloadRetentionDays < policy.retentionDays ? due.payloads : 0;
  return report;
}
