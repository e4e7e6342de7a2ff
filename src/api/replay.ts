/** POST /v1/deliveries/{id}/replay: requeue one dead-lettered or failed delivery now. */
import { Hono } from 'hono';
import type { Sql } from '../db/connect.js';
import { getDelivery } from '../deliveries/read.js';
import { ReplayError, replayDelivery } from '../deliveries/replay.js';
import { actorOf } from '../tenants/audit.js';
import { type ApiEnv, callerOf } from './auth.js';
import { HttpError } from './errors.js';
import { requestSpan } from './tracing.js';

const STATUS_FOR: Record<ReplayError['kind'], 404 | 409 | 429> = {
  delivery_not_found: 404,
  endpoint_not_found: 404,
  not_replayable: 409,
  endpoint_unavailable: 409,
  payload_expired: 409,
  too_many_runs: 429,
};

export function replayRoutes(deps: { sql: Sql }) {
  const app = new Hono<ApiEnv>();

  app.post('/:id/replay', async (c) => {
    const id = c.req.param('id');
    const caller = callerOf(c);
    let auditId: string;
    try {
      auditId = await replayDelivery(
        deps.sql,
        caller,
        id,
        actorOf(caller),
        requestSpan(c)?.traceparent ?? null,
      );
    } catch (error) {
      if (!(error instanceof ReplayError)) throw error;
      throw new HttpError(STATUS_FOR[error.kind], error.kind, error.message);
    }
    // 202: queued again, not yet sent. The body is the delivery as it now stands.
    const found = await getDelivery(deps.sql, caller, id);
    return c.json({ ...found!.delivery, audit_id: auditId }, 202);
  });

  return app;
}
