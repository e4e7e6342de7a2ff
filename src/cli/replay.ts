/**
 * `hookpost replay --endpoint ID [--since T] [--until T] [--limit N] [--dry-run]`: the paced
 * bulk replay of deliveries/bulk-replay.ts, run in this process with a progress display. Ctrl-C
 * stops after the batch in progress; what was not replayed stays dead-lettered. With
 * `--include-delivered` it is a resend (deliveries/resend.ts) of every delivery in the range.
 */
import os from 'node:os';
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { MAX_REPLAY_LIMIT, type ReplayFilter, runReplay, startReplay } from '../deliveries/bulk-replay.js';
import type { ReplayPace } from '../deliveries/paced-requeue.js';
import { ReplayError } from '../deliveries/replay.js';
import { planResend, type ResendFilter, runResend } from '../deliveries/resend.js';
import type { Actor } from '../tenants/audit.js';
import { plural } from '../util/plural.js';
import { withDatabase } from './database.js';
import { createProgress } from './progress.js';
import { parseTimeArg } from './time-arg.js';
import { UsageError } from './usage-error.js';

export interface ReplayArgs {
  endpoint?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
  'error-class'?: string | undefined;
  'status-code'?: string | undefined;
  'dry-run'?: boolean | undefined;
  'include-delivered'?: boolean | undefined;
}

function integerArg(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got ${raw}`);
  }
  return value;
}

/** Validates the options into a filter; throws UsageError (exit 2) on anything wrong. */
export function replayFilterFromArgs(args: ReplayArgs, now: Date): ReplayFilter {
  if (args.endpoint === undefined || args.endpoint.trim() === '') {
    throw new UsageError('--endpoint ID is required (bulk replay is per endpoint from the CLI)');
  }
  const since = args.since === undefined ? undefined : parseTimeArg('since', args.since, now);
  const until = args.until === undefined ? undefined : parseTimeArg('until', args.until, now);
  if (since !== undefined && until !== undefined && since > until) {
    throw new UsageError('--until must not be before --since');
  }
  if (args['error-class'] !== undefined && args['error-class'].trim() === '') {
    throw new UsageError('--error-class must not be empty');
  }
  return {
    // The operator's command reaches every tenant; the endpoint id names one.
    tenantId: null,
    operations: true,
    endpointId: args.endpoint,
    since,
    until,
    errorClass: args['error-class'],
    statusCode: integerArg('status-code', args['status-code'], 100, 599),
    limit: integerArg('limit', args.limit, 1, MAX_REPLAY_LIMIT),
  };
}

/** The audit's actor: who ran the command, as far as this machine can tell. */
function cliActor(): Actor {
  let name = 'cli';
  try {
    name = `cli:${os.userInfo().username}`;
  } catch {}
  return { keyId: name, keyName: name };
}

const out = (text: string) => process.stdout.write(`${text}\n`);

async function replay(sql: Sql, config: Config, filter: ReplayFilter, dryRun: boolean): Promise<number> {
  const id = filter.endpointId!;
  const plan = await startReplay(sql, filter, { actor: cliActor(), dryRun, refuseDisabledEndpoint: true });
  if (dryRun) {
    out(
      `dry run: ${plural(plan.matched, 'dead letter')} ${plan.matched === 1 ? 'matches' : 'match'}; ` +
        `${plan.matched - plan.unavailable} would be replayed, ` +
        `${plan.unavailable} skipped (endpoint disabled). Nothing was changed. Audit: ${plan.auditId}`,
    );
    return 0;
  }
  if (plan.matched === 0) {
    out(`no dead letters match; nothing to replay. Audit: ${plan.auditId}`);
    return 0;
  }
  const seconds = Math.ceil(plan.matched / config.replayRatePerSecond);
  out(
    `replaying ${plural(plan.matched, 'dead letter')} of ${id} in batches of ${config.replayBatchSize}, at most ` +
      `${config.replayRatePerSecond}/s (about ${seconds} s); Ctrl-C stops after the current batch`,
  );
  const outcome = await withProgress(config, plan.matched, 'replayed', (pace) =>
    runReplay(sql, plan, filter, pace),
  );
  if (outcome.state === 'interrupted') {
    out(
      `interrupted: replayed ${outcome.replayed} of ${plan.matched}; the rest are still dead letters ` +
        `(run the same command again to continue). Audit: ${plan.auditId}`,
    );
    return 1;
  }
  out(
    `replayed ${outcome.replayed} of ${plan.matched}` +
      (outcome.skipped ? `, skipped ${outcome.skipped} (endpoint disabled or no longer dead)` : '') +
      `; they fall due at most ${config.replayRatePerSecond}/s. Audit: ${plan.auditId}`,
  );
  return 0;
}

/**
 * `--include-delivered`: a resend (deliveries/resend.ts) of the endpoint's deliveries created in
 * the range, whatever their state, rather than a replay of its dead letters. --since and --until
 * then bound when the events were accepted; --since is required (a resend of everything ever
 * kept should be asked for: --since 1970-01-01).
 */
export function resendFilterFromArgs(args: ReplayArgs, now: Date): ResendFilter {
  if (args['error-class'] !== undefined || args['status-code'] !== undefined) {
    throw new UsageError(
      '--error-class and --status-code select dead letters; they do not go with --include-delivered',
    );
  }
  const base = replayFilterFromArgs(args, now);
  if (base.since === undefined) {
    throw new UsageError('--include-delivered needs --since (when the events to resend were accepted)');
  }
  return {
    tenantId: null,
    operations: true,
    endpointId: base.endpointId!,
    since: base.since,
    until: base.until,
    limit: base.limit,
  };
}

async function resend(sql: Sql, config: Config, filter: ResendFilter, dryRun: boolean): Promise<number> {
  const plan = await planResend(sql, filter, {
    actor: cliActor(),
    dryRun,
    reason: 'hookpost replay --include-delivered',
  });
  const skippedText = `${plan.queued} skipped (still queued or in flight), ${plan.payloadExpired} skipped (payload expired)`;
  if (dryRun) {
    out(
      `dry run: ${plural(plan.matched, 'delivery', 'deliveries')} ${plan.matched === 1 ? 'matches' : 'match'}; ` +
        `${plan.matched - plan.queued - plan.payloadExpired} would be ` +
        `resent, ${skippedText}. Nothing was changed. Audit: ${plan.auditId}`,
    );
    return 0;
  }
  if (plan.matched === 0) {
    out(`no deliveries match; nothing to resend. Audit: ${plan.auditId}`);
    return 0;
  }
  out(
    `resending ${plural(plan.matched, 'delivery', 'deliveries')} of ${filter.endpointId} (delivered ones included) in batches of ` +
      `${config.replayBatchSize}, at most ${config.replayRatePerSecond}/s; Ctrl-C stops after the current batch`,
  );
  const outcome = await withProgress(config, plan.matched, 'resent', (pace) =>
    runResend(sql, plan, filter, pace),
  );
  if (outcome.state === 'interrupted') {
    out(`interrupted: resent ${outcome.resent} of ${plan.matched}. Audit: ${plan.auditId}`);
    return 1;
  }
  out(`resent ${outcome.resent} of ${plan.matched}, skipped ${outcome.skipped}. Audit: ${plan.auditId}`);
  return 0;
}

export async function runReplayCommand(config: Config, args: ReplayArgs): Promise<number> {
  const dryRun = args['dry-run'] === true;
  if (args['include-delivered'] === true) {
    const filter = resendFilterFromArgs(args, new Date());
    try {
      return await withDatabase(config, (sql) => resend(sql, config, filter, dryRun));
    } catch (error) {
      if (!(error instanceof ReplayError)) throw error;
      process.stderr.write(`hookpost: ${error.message}\n`);
      return 1;
    }
  }
  const filter = replayFilterFromArgs(args, new Date());
  try {
    return await withDatabase(config, (sql) => replay(sql, config, filter, dryRun));
  } catch (error) {
    // Refusals the operator can act on (unknown or disabled endpoint): one line, exit 1.
    if (!(error instanceof ReplayError)) throw error;
    process.stderr.write(`hookpost: ${error.message}\n`);
    return 1;
  }
}

/**
 * Runs a paced replay or resend at the configured batch size and rate with a progress display;
 * Ctrl-C stops it after the batch in progress.
 */
async function withProgress<T>(
  config: Config,
  total: number,
  verb: string,
  run: (pace: ReplayPace) => Promise<T>,
): Promise<T> {
  const progress = createProgress(process.stdout, total, verb);
  const stop = stopOnSignal();
  try {
    return await run({
      batchSize: config.replayBatchSize,
      ratePerSecond: config.replayRatePerSecond,
      signal: stop.signal,
      onProgress: (p) => progress.update(p.replayed + p.skipped, p.skipped ? `(${p.skipped} skipped)` : ''),
    });
  } finally {
    progress.finish();
    stop.release();
  }
}

/**
 * Ctrl-C (or SIGTERM) aborts `signal`, so a paced run stops between batches instead of dying
 * mid-batch; `release()` gives the signals back to their default handling.
 */
function stopOnSignal(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    release() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
