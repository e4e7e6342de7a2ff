/**
 * How many paced runs (bulk replays and resends) one tenant may have going at once. Each run
 * sends a partner up to HOOKPOST_REPLAY_RATE_PER_SECOND requests a second on top of live traffic;
 * without a cap a tenant-bound key could start as many as it likes and multiply that load on a
 * third party. Counted from replay_audit's `running` rows, across every API process; a row whose
 * process died mid-run stops counting once it has not advanced for `staleAfterSeconds`.
 */
import type { Sql } from '../db/connect.js';
import { insertAudit, type NewAudit, ReplayError } from './replay.js';

export interface PacedRunLimit {
  /** Runs of one tenant going at once (HOOKPOST_MAX_REPLAYS_PER_TENANT). */
  perTenant: number;
  /** A running row not advanced for this long is taken for a run whose process died. */
  staleAfterSeconds: number;
}

/**
 * Writes a run's audit row (insertAudit), refusing with `too_many_runs` when the tenant already
 * has `limit.perTenant` live runs. A transaction-scoped advisory lock per tenant makes the count
 * and the insert one step, so two requests racing cannot both take the last place. Operator runs
 * across tenants, dry runs and runs that finish at once are not limited.
 */
export async function insertAuditWithinLimit(
  sql: Sql,
  audit: NewAudit,
  limit: PacedRunLimit | undefined,
): Promise<string> {
  const tenantId = audit.tenantId;
  if (!limit || audit.state !== 'running' || tenantId === null) return insertAudit(sql, audit);
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`hookpost.paced-runs:${tenantId}`}, 0))`;
    const [row] = await tx<{ running: number }[]>`
      SELECT count(*)::int AS running FROM replay_audit
      WHERE tenant_id = ${tenantId} AND state = 'running'
        AND updated_at > now() - make_interval(secs => ${limit.staleAfterSeconds})`;
    const running = row!.running;
    if (running >= limit.perTenant) {
      throw new ReplayError(
        'too_many_runs',
        `tenant ${tenantId} has ${running} bulk replays or resends running (at most ${limit.perTenant} at once, HOOKPOST_MAX_REPLAYS_PER_TENANT): try again when one finishes`,
      );
    }
    return insertAudit(tx, audit);
  });
}

/** The limit as the config sets it: a run advances at least once per batch. */
export function pacedRunLimit(config: {
  maxReplaysPerTenant: number;
  replayBatchSize: number;
  replayRatePerSecond: number;
}): PacedRunLimit {
  const batchSeconds = config.replayBatchSize / config.replayRatePerSecond;
  return { perTenant: config.maxReplaysPerTenant, staleAfterSeconds: Math.max(120, 3 * batchSeconds) };
}
