/**
 * /v1/dead-letters: the analysis (what died, of what, which pattern), and the paced bulk replay
 * with its progress. Single-delivery replay lives in api/replay.ts.
 */

import { type Context, Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import {
  MAX_REPLAY_LIMIT,
  planReplay,
  type ReplayFilter,
  type ReplayProgress,
  runReplay,
} from '../deliveries/bulk-replay.js';
import { analyzeDeadLetters, MAX_ANALYSIS_HOURS } from '../deliveries/dead-letter-analysis.js';
import type { PatternThresholds } from '../deliveries/dead-letter-patterns.js';
import { getAudit } from '../deliveries/replay.js';
import type { Logger } from '../log.js';
import type { BackgroundTasks } from './background.js';
import { readJsonBody, validate } from './body.js';
import { HttpError } from './errors.js';
import { pageLimit } from './pagination.js';
import { jsonSafeString, pgTimestampSchema } from './validation.js';

export const analysisQuery = z.object({
  hours: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of hours')
    .transform(Number)
    .pipe(z.number().positive().max(MAX_ANALYSIS_HOURS))
    .optional(),
  endpoint_id: z.string().min(1).max(255).optional(),
});

// Checked against what PostgreSQL can hold (no year 0000, offsets within ±15:59), else a 500.
const timestamp = pgTimestampSchema;
export const replayBody = z
  .strictObject({
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
    (b) => [b.endpoint_id, b.since, b.until, b.error_class, b.status_code].some((v) => v !== undefined),
    {
      message:
        'give at least one of endpoint_id, since, until, error_class, status_code ' +
        '(to replay every dead letter, say since: "1970-01-01T00:00:00Z")',
    },
  );

export interface DeadLetterRoutesDeps {
  sql: Sql;
  log: Logger;
  replayBatchSize: number;
  replayRatePerSecond: number;
  patternThresholds?: PatternThresholds | undefined;
  /** Shutdown aborts a running bulk replay through this and waits for it. */
  background?: BackgroundTasks | undefined;
}

/** The caller's identity for the audit: bearerAuth sets it (one admin token: 'admin'). */
export function actorOf(c: Context): string {
  return (c.get('actor' as never) as string | undefined) ?? 'admin';
}

async function assertEndpointExists(sql: Sql, id: string): Promise<void> {
  const [row] = await sql`SELECT 1 FROM endpoints WHERE id = ${id} AND deleted_at IS NULL`;
  if (!row) throw new HttpError(404, 'endpoint_not_found', `endpoint ${id} not found`);
}

export function deadLetterRoutes(deps: DeadLetterRoutesDeps) {
  const app = new Hono();

  app.get('/analysis', async (c) => {
    const query = validate(analysisQuery, c.req.query());
    const hours = query.hours ?? 24;
    const endpoints = await analyzeDeadLetters(deps.sql, {
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
    if (body.endpoint_id !== undefined) await assertEndpointExists(deps.sql, body.endpoint_id);
    const filter: ReplayFilter = {
      endpointId: body.endpoint_id,
      since: body.since,
      until: body.until,
      errorClass: body.error_class,
      statusCode: body.status_code,
      limit: body.limit,
    };
    const dryRun = body.dry_run ?? false;
    const plan = await planReplay(deps.sql, filter, { actor: actorOf(c), dryRun });
    if (dryRun || plan.matched === 0) {
      return c.json({
        audit_id: plan.auditId,
        dry_run: dryRun,
        state: 'finished',
        matched: plan.matched,
        replayed: 0,
        skipped: dryRun ? plan.unavailable : 0,
      });
    }
    // A large replay runs for matched / rate seconds, longer than a caller should hold a request
    // open: answer after the first batch is committed (so a failure shows here) and let the rest
    // continue in this process. GET /replays/{audit_id} shows progress; a graceful shutdown stops
    // it between batches (audit `interrupted`); a crash leaves it `running`. Either way the rest
    // stays dead-lettered: rerun the filter.
    let firstBatch!: (p: ReplayProgress) => void;
    const firstProgress = new Promise<ReplayProgress>((resolve) => {
      firstBatch = resolve;
    });
    const run = runReplay(deps.sql, plan, filter, {
      batchSize: deps.replayBatchSize,
      ratePerSecond: deps.replayRatePerSecond,
      onProgress: (p) => firstBatch(p),
      signal: deps.background?.signal,
    });
    deps.background?.track(run);
    const progress = await Promise.race([firstProgress, run]);
    run.then(
      (outcome) => deps.log.info({ auditId: plan.auditId, ...outcome }, 'bulk replay ended'),
      (error: Error) =>
        deps.log.error(
          { auditId: plan.auditId, errorName: error.name, message: error.message },
          'bulk replay failed',
        ),
    );
    const audit = await getAudit(deps.sql, plan.auditId);
    return c.json(
      {
        audit_id: plan.auditId,
        dry_run: false,
        state: audit?.state ?? 'running',
        matched: plan.matched,
        replayed: Math.max(progress.replayed, audit?.replayed ?? 0),
        skipped: Math.max(progress.skipped, audit?.skipped ?? 0),
      },
      202,
    );
  });

  app.get('/replays/:id', async (c) => {
    const audit = await getAudit(deps.sql, c.req.param('id'));
    if (!audit) throw new HttpError(404, 'replay_not_found', `replay ${c.req.param('id')} not found`);
    return c.json(audit);
  });

  return app;
}
