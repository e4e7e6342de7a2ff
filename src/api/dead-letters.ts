/**
 * /v1/dead-letters: the analysis (what died, of what, which pattern), and the paced bulk replay
 * with its progress. Single-delivery replay lives in api/replay.ts.
 */

import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { MAX_REPLAY_LIMIT, type ReplayFilter, runReplay, startReplay } from '../deliveries/bulk-replay.js';
import { analyzeDeadLetters, MAX_ANALYSIS_HOURS } from '../deliveries/dead-letter-analysis.js';
import type { PatternThresholds } from '../deliveries/dead-letter-patterns.js';
import type { PacedRunLimit } from '../deliveries/paced-run-limit.js';
import { type AuditRow, getAudit, ReplayError } from '../deliveries/replay.js';
import { circuitsAhead } from '../deliveries/replay-circuits.js';
import type { Logger } from '../log.js';
import { actorOf } from '../tenants/audit.js';
import { narrowScope, TENANT_ID } from '../tenants/scope.js';
import { type ApiEnv, callerOf } from './auth.js';
import { type BackgroundTasks, startPacedRun } from './background.js';
import { readJsonBody, validate } from './body.js';
import { notFound, tooManyRuns } from './errors.js';
import { pageLimit } from './pagination.js';
import { tenantForWrite } from './tenant-arg.js';
import { requestSpan } from './tracing.js';
import { jsonSafeString, pgTimestampSchema } from './validation.js';

export const analysisQuery = z.object({
  hours: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of hours')
    .transform(Number)
    .pipe(z.number().positive().max(MAX_ANALYSIS_HOURS))
    .optional(),
  endpoint_id: z.string().min(1).max(255).optional(),
  tenant_id: z.string().min(1).max(128).optional(),
});

// Checked against what PostgreSQL can hold (no year 0000, offsets within ±15:59), else a 500.
const timestamp = pgTimestampSchema;
export const replayBody = z
  .strictObject({
    tenant_id: z.string().regex(TENANT_ID, 'must be 1-128 of A-Za-z0-9._:-').optional(),
    // Both go into the audit row's jsonb filter, whose parser refuses lone surrogates.
    endpoint_id: jsonSafeString().min(1).max(255).optional(),
    since: timestamp.optional(),
    until: timestamp.optional(),
    error_class: jsonSafeString().min(1).max(100).optional(),
    status_code: z.number().int().min(100).max(599).optional(),
    limit: z.number().int().positive().max(MAX_REPLAY_LIMIT).optional(),
    dry_run: z.boolean().optional(),
  })
  .refine(
    (b) => b.since === undefined || b.until === undefined || Date.parse(b.since) <= Date.parse(b.until),
    {
      path: ['until'],
      message: 'must not be before since',
    },
  )
  // An empty filter would replay every dead letter ever kept; ask for that explicitly.
  .refine(
    (b) =>
      [b.tenant_id, b.endpoint_id, b.since, b.until, b.error_class, b.status_code].some(
        (v) => v !== undefined,
      ),
    {
      message:
        'give at least one of endpoint_id, tenant_id, since, until, error_class, status_code ' +
        '(to replay every dead letter, say since: "1970-01-01T00:00:00Z")',
    },
  );

export interface DeadLetterRoutesDeps {
  sql: Sql;
  log: Logger;
  replayBatchSize: number;
  replayRatePerSecond: number;
  /** How many bulk replays and resends one tenant may have running at once. */
  runLimit?: PacedRunLimit | undefined;
  patternThresholds?: PatternThresholds | undefined;
  /** Shutdown aborts a running bulk replay through this and waits for it. */
  background?: BackgroundTasks | undefined;
}

export function deadLetterRoutes(deps: DeadLetterRoutesDeps) {
  const app = new Hono<ApiEnv>();

  app.get('/analysis', async (c) => {
    const query = validate(analysisQuery, c.req.query());
    const hours = query.hours ?? 24;
    const scope = narrowScope(callerOf(c), query.tenant_id);
    if (!scope) return c.json({ hours, endpoints: [] });
    const endpoints = await analyzeDeadLetters(deps.sql, scope, {
      hours,
      endpointId: query.endpoint_id,
      limit: pageLimit(c.req.query('limit')),
      thresholds: deps.patternThresholds,
    });
    return c.json({ hours, endpoints });
  });

  app.post('/replay', async (c) => {
    const { value } = await readJsonBody(c, 16 * 1024);
    const body = validate(replayBody, value);
    const caller = callerOf(c);
    const filter: ReplayFilter = {
      tenantId: tenantForWrite(caller, body.tenant_id) ?? null,
      operations: caller.operations,
      endpointId: body.endpoint_id,
      since: body.since,
      until: body.until,
      errorClass: body.error_class,
      statusCode: body.status_code,
      limit: body.limit,
    };
    const dryRun = body.dry_run ?? false;
    let plan: Awaited<ReturnType<typeof startReplay>>;
    try {
      plan = await startReplay(deps.sql, filter, {
        actor: actorOf(caller),
        dryRun,
        runLimit: deps.runLimit,
        traceparent: requestSpan(c)?.traceparent,
      });
    } catch (error) {
      if (error instanceof ReplayError && error.kind === 'endpoint_not_found')
        notFound('endpoint', body.endpoint_id!);
      if (error instanceof ReplayError && error.kind === 'too_many_runs') tooManyRuns(error);
      throw error;
    }
    // Before anything is requeued: afterwards the matched rows are no longer dead letters.
    const openCircuits = plan.matched === 0 ? [] : await circuitsAhead(deps.sql, filter, plan.asOf);
    if (dryRun || plan.matched === 0) {
      return c.json({
        audit_id: plan.auditId,
        dry_run: dryRun,
        state: 'finished',
        matched: plan.matched,
        replayed: 0,
        skipped: dryRun ? plan.unavailable : 0,
        open_circuits: openCircuits,
      });
    }
    // A large replay runs for matched / rate seconds, longer than a caller should hold a request
    // open: answer after the first batch is committed (so a failure shows here) and let the rest
    // continue in this process. GET /replays/{audit_id} shows progress; a graceful shutdown stops
    // it between batches (audit `interrupted`); a crash leaves it `running`. Either way the rest
    // stays dead-lettered: rerun the filter.
    const progress = await startPacedRun(
      deps,
      'bulk replay',
      plan.auditId,
      (pace) =>
        runReplay(deps.sql, plan, filter, {
          batchSize: deps.replayBatchSize,
          ratePerSecond: deps.replayRatePerSecond,
          ...pace,
        }),
      (outcome) => outcome,
    );
    const audit = await getAudit(deps.sql, filter, plan.auditId);
    return c.json(
      {
        audit_id: plan.auditId,
        dry_run: false,
        state: audit?.state ?? 'running',
        matched: plan.matched,
        replayed: Math.max(progress.replayed, audit?.replayed ?? 0),
        skipped: Math.max(progress.skipped, audit?.skipped ?? 0),
        open_circuits: openCircuits,
      },
      202,
    );
  });

  app.get('/replays/:id', async (c) => {
    const audit = await getAudit(deps.sql, callerOf(c), c.req.param('id'));
    if (!audit) notFound('replay', c.req.param('id'));
    return c.json(progressJson(audit));
  });

  return app;
}

/**
 * A replay's progress in its own words. The same audit table records resends
 * (POST /v1/endpoints/{id}/resend), whose answer counts `resent`: their progress says `resent`
 * too, and `kind` tells the two apart.
 */
export function progressJson(audit: AuditRow) {
  const { replayed, ...rest } = audit;
  return audit.filter.kind === 'resend'
    ? { ...rest, kind: 'resend' as const, resent: replayed }
    : { ...rest, kind: 'replay' as const, replayed };
}
