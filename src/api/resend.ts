/**
 * POST /v1/endpoints/{id}/resend: send an endpoint's events of a time range again, whatever their
 * state, with their original webhook-ids; paced and audited (deliveries/resend.ts).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { MAX_REPLAY_LIMIT } from '../deliveries/bulk-replay.js';
import type { PacedRunLimit } from '../deliveries/paced-run-limit.js';
import { DELIVERY_STATUSES } from '../deliveries/read.js';
import { getAudit, ReplayError } from '../deliveries/replay.js';
import { planResend, type ResendFilter, runResend } from '../deliveries/resend.js';
import type { Logger } from '../log.js';
import { actorOf } from '../tenants/audit.js';
import { type ApiEnv, callerOf } from './auth.js';
import { type BackgroundTasks, startPacedRun } from './background.js';
import { readJsonBody, validate } from './body.js';
import { HttpError, notFound, tooManyRuns } from './errors.js';
import { resendSchema } from './openapi/messages-responses.js';
import { tooManyRunsRefusal } from './openapi/refusals.js';
import { documentRoute } from './openapi/registry.js';
import { requestSpan } from './tracing.js';
import { jsonSafeString, pgTimestampSchema } from './validation.js';

const EVENT_TYPE_ENTRY = /^[A-Za-z0-9_.:-]+(\.\*)?$/;

export const resendBody = z
  .strictObject({
    since: pgTimestampSchema.meta({ description: 'deliveries created (events accepted) at or after this' }),
    until: pgTimestampSchema.optional().meta({ description: 'and before this; default: now' }),
    event_types: z
      .array(
        jsonSafeString()
          .min(1)
          .max(255)
          .regex(EVENT_TYPE_ENTRY, 'must be an event type or a prefix like order.*'),
      )
      .min(1)
      .max(100)
      .optional()
      .meta({ description: 'only these (`order.*` matches order.created)' }),
    statuses: z.array(z.enum(DELIVERY_STATUSES)).min(1).optional().meta({
      description: 'only deliveries now in these states; queued and in-flight ones are never requeued',
    }),
    limit: z
      .number()
      .int()
      .positive()
      .max(MAX_REPLAY_LIMIT)
      .optional()
      .meta({ description: 'at most this many, oldest first' }),
    dry_run: z.boolean().optional().meta({ description: 'count only; change nothing' }),
    reason: jsonSafeString().min(1).max(500).optional().meta({ description: 'why, kept in the audit log' }),
  })
  .refine((b) => b.until === undefined || Date.parse(b.since) <= Date.parse(b.until), {
    path: ['until'],
    message: 'must not be before since',
  });

documentRoute({
  method: 'post',
  path: '/v1/endpoints/{id}/resend',
  operationId: 'resendEndpointEvents',
  tag: 'endpoints',
  summary: "Send an endpoint's events of a time range again, delivered ones included (paced, audited)",
  description:
    'Each delivery is requeued with its original `webhook-id`, so a receiver that deduplicates by it ' +
    'is safe. Deliveries still queued or in flight are skipped (they are being sent), and so are those ' +
    'whose payload has expired. Answers after the first batch; GET /v1/dead-letters/replays/{audit_id} ' +
    'shows the progress.',
  params: z.object({ id: z.string().meta({ description: 'endpoint id (ep_…)' }) }),
  body: resendBody,
  responses: {
    200: { description: 'dry run, or nothing matched', schema: resendSchema },
    202: { description: 'first batch committed; the rest continues, paced', schema: resendSchema },
    ...tooManyRunsRefusal,
  },
  errors: [404, 409],
});

export interface ResendRoutesDeps {
  sql: Sql;
  log: Logger;
  replayBatchSize: number;
  replayRatePerSecond: number;
  /** How many bulk replays and resends one tenant may have running at once. */
  runLimit?: PacedRunLimit | undefined;
  background?: BackgroundTasks | undefined;
}

export function resendRoutes(deps: ResendRoutesDeps) {
  const app = new Hono<ApiEnv>();

  app.post('/:id/resend', async (c) => {
    const id = c.req.param('id');
    const { value } = await readJsonBody(c, 16 * 1024);
    const body = validate(resendBody, value);
    const caller = callerOf(c);
    const filter: ResendFilter = {
      tenantId: caller.tenantId,
      operations: caller.operations,
      endpointId: id,
      since: body.since,
      until: body.until,
      eventTypes: body.event_types,
      statuses: body.statuses,
      limit: body.limit,
    };
    const dryRun = body.dry_run ?? false;
    let plan: Awaited<ReturnType<typeof planResend>>;
    try {
      plan = await planResend(deps.sql, filter, {
        actor: actorOf(caller),
        dryRun,
        reason: body.reason,
        runLimit: deps.runLimit,
        traceparent: requestSpan(c)?.traceparent,
      });
    } catch (error) {
      if (!(error instanceof ReplayError)) throw error;
      if (error.kind === 'endpoint_not_found') notFound('endpoint', id);
      if (error.kind === 'too_many_runs') tooManyRuns(error);
      throw new HttpError(409, error.kind, error.message);
    }
    const answer = (state: string, resent: number, status: 200 | 202) =>
      c.json(
        {
          audit_id: plan.auditId,
          dry_run: dryRun,
          state,
          matched: plan.matched,
          resent,
          skipped: plan.queued + plan.payloadExpired,
          skipped_queued: plan.queued,
          skipped_payload_expired: plan.payloadExpired,
        },
        status,
      );
    if (dryRun || plan.matched === 0) return answer('finished', 0, 200);
    // As a bulk replay does (api/dead-letters.ts): answer once the first batch is committed and
    // let the rest go on in this process, paced; a shutdown stops it between batches.
    const progress = await startPacedRun(
      deps,
      'resend',
      plan.auditId,
      (pace) =>
        runResend(deps.sql, plan, filter, {
          batchSize: deps.replayBatchSize,
          ratePerSecond: deps.replayRatePerSecond,
          ...pace,
        }),
      (outcome) => ({ matched: outcome.matched, replayed: outcome.resent, skipped: outcome.skipped }),
    );
    const audit = await getAudit(deps.sql, caller, plan.auditId);
    return answer(audit?.state ?? 'running', Math.max(progress.replayed, audit?.replayed ?? 0), 202);
  });

  return app;
}
