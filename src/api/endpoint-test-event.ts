/**
 * POST /v1/endpoints/{id}/test-event: one signed `hookpost.test` event to one endpoint, with a
 * payload hookpost writes itself. It needs `endpoints:write`, not `deliveries:write`: a partner
 * portal session may check its own endpoint end to end without being able to enqueue arbitrary
 * signed payloads (which its receiver would trust as the sender's), fan out, or erase messages.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Sql } from '../db/connect.js';
import { enqueue } from '../deliveries/enqueue.js';
import { EnqueueError } from '../deliveries/enqueue-types.js';
import type { EndpointStore } from '../endpoints/store.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import type { WakeUps } from '../queue/wakeup.js';
import type { Admission } from './admission.js';
import { type ApiEnv, callerOf } from './auth.js';
import { notFound } from './errors.js';
import { enqueueRefusals } from './openapi/refusals.js';
import { documentRoute } from './openapi/registry.js';
import { enqueueResultSchema } from './openapi/responses.js';

export const TEST_EVENT_TYPE = 'hookpost.test';

documentRoute({
  method: 'post',
  path: '/v1/endpoints/{id}/test-event',
  operationId: 'sendTestEvent',
  tag: 'endpoints',
  summary: `Send one signed ${TEST_EVENT_TYPE} event to this endpoint (endpoints:write)`,
  description:
    'The payload is fixed by hookpost: {type, timestamp, data: {tenant_id, endpoint_id, message}}. ' +
    "It is sent whatever the endpoint's event_types and filter, retried and listed like any delivery.",
  params: z.object({ id: z.string().meta({ description: 'endpoint id (ep_…)' }) }),
  responses: {
    202: { description: 'committed and queued', schema: enqueueResultSchema },
    ...enqueueRefusals,
  },
  errors: [404],
});

export interface TestEventDeps {
  sql: Sql;
  endpoints: EndpointStore;
  waker: WakeUps;
  metrics: HookpostMetrics;
  /** The same rate limit and backlog bound as an enqueue: a test event is sent like one. */
  admission: Admission;
}

/** Mounted under /v1/endpoints. */
export function testEventRoutes(deps: TestEventDeps) {
  const app = new Hono<ApiEnv>();
  app.post('/:id/test-event', async (c) => {
    const id = c.req.param('id');
    const caller = callerOf(c);
    // Scoped like every read: another tenant's endpoint is as unknown as a missing one.
    const endpoint = await deps.endpoints.get(caller, id);
    if (!endpoint) notFound('endpoint', id);
    await deps.admission.checkBacklog();
    await deps.admission.checkRate(caller, 1);
    const payload = Buffer.from(
      JSON.stringify({
        type: TEST_EVENT_TYPE,
        timestamp: new Date().toISOString(),
        data: {
          tenant_id: endpoint.tenantId,
          endpoint_id: id,
          message: 'A test event sent by hookpost: no action is needed.',
        },
      }),
    );
    let result: Awaited<ReturnType<typeof enqueue>>[number] | undefined;
    try {
      [result] = await enqueue(
        deps.sql,
        caller,
        [
          {
            tenantId: endpoint.tenantId,
            endpointId: id,
            eventType: TEST_EVENT_TYPE,
            eventId: null,
            orderingKey: null,
            idempotencyKey: null,
            payload,
          },
        ],
        // Sent whatever the endpoint's event types and content filter say: it tests the endpoint.
        { waker: deps.waker, ignoreFilters: true },
      );
    } catch (error) {
      // Deleted between the read and the enqueue (the enqueue checks inside its transaction).
      if (error instanceof EnqueueError && error.kind === 'endpoint_not_found') notFound('endpoint', id);
      throw error;
    }
    deps.metrics.deliveriesEnqueued.inc(result!.deliveries.length);
    return c.json(
      {
        message_id: result!.messageId,
        duplicate: false,
        deliveries: result!.deliveries.map((d) => ({
          id: d.id,
          endpoint_id: d.endpointId,
          status: d.status,
        })),
        filtered: [],
      },
      202,
    );
  });
  return app;
}
