/**
 * POST /v1/endpoints/{id}/close-circuit: an operator (or partner) who knows the endpoint is back
 * closes its circuit by hand instead of waiting for the next probe ("Retry now" on the endpoint's
 * page). The breaker forgets its failures and the deliveries parked behind the circuit become due
 * now, through the endpoint lifecycle (src/endpoints/lifecycle.ts closeCircuits, which moves them
 * with the queue's own unpark transition). Audited like every endpoint change. A circuit that is
 * already closed answers 200 with nothing released; a disabled endpoint is 409: enabling it closes
 * its circuit too, and closing alone would release nothing.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { closeCircuits } from '../endpoints/lifecycle.js';
import type { EndpointStore } from '../endpoints/store.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { type ApiEnv, callerOf } from './auth.js';
import { HttpError, notFound } from './errors.js';
import { documentRoute } from './openapi/registry.js';

export const closedCircuitSchema = z
  .object({
    endpoint_id: z.string(),
    state: z.literal('closed'),
    previous_state: z.enum(['closed', 'open', 'half_open']),
    released: z.number().int().meta({
      description: 'deliveries that waited behind the circuit and are due now (0 when it was already closed)',
    }),
  })
  .meta({ id: 'ClosedCircuit' });

documentRoute({
  method: 'post',
  path: '/v1/endpoints/{id}/close-circuit',
  operationId: 'closeEndpointCircuit',
  tag: 'endpoints',
  summary: "Close the endpoint's circuit now: its waiting deliveries are sent at once (endpoints:write)",
  description:
    'For when the partner is known to be back: the circuit closes, its failure streak is forgotten and ' +
    'the deliveries parked behind it become due now, instead of waiting for the next probe. Recorded in ' +
    'the audit log (endpoint.circuit_closed) and sent to the operators as endpoint.circuit_closed. ' +
    'Failures after it open the circuit again as usual. 409 endpoint_disabled for a disabled endpoint: ' +
    'enabling it closes its circuit as well.',
  params: z.object({ id: z.string().meta({ description: 'endpoint id (ep_…)' }) }),
  responses: { 200: { description: 'the circuit is closed', schema: closedCircuitSchema } },
  errors: [404, 409],
});

/** Mounted under /v1/endpoints. */
export function circuitRoutes(deps: { sql: Sql; endpoints: EndpointStore }) {
  const app = new Hono<ApiEnv>();
  app.post('/:id/close-circuit', async (c) => {
    const id = c.req.param('id');
    const caller = callerOf(c);
    // Scoped like every endpoint route: another tenant's endpoint is as unknown as a missing one.
    const endpoint = await deps.endpoints.get(caller, id);
    if (!endpoint) notFound('endpoint', id);
    if (!endpoint.enabled) {
      throw new HttpError(
        409,
        'endpoint_disabled',
        `${id} is disabled: enable it (that closes its circuit too) to send its waiting deliveries`,
      );
    }
    // One statement: close, unpark, tell the operators. Already closed: nothing changes.
    const [closed] = await closeCircuits(deps.sql, [id]);
    const previous = (closed?.from ?? 'closed') as 'closed' | 'open' | 'half_open';
    const released = closed?.released ?? 0;
    if (closed) {
      await recordAudit(deps.sql, actorOf(caller), {
        action: 'endpoint.circuit_closed',
        resourceType: 'endpoint',
        resourceId: id,
        tenantId: endpoint.tenantId,
        details: { previous_state: previous, released },
      });
    }
    return c.json({ endpoint_id: id, state: 'closed' as const, previous_state: previous, released });
  });
  return app;
}
