/**
 * The description of every route that existed when the document was introduced. Request schemas
 * are imported from the route files (the objects their handlers validate with); a route added
 * later registers itself with one documentRoute() call beside its handler.
 */
import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../deliveries/read.js';
import { analysisQuery, replayBody } from '../dead-letters.js';
import { createSchema, patchSchema } from '../endpoint-body.js';
import { batchItemSchema, batchSchema, itemSchema } from '../enqueue-items.js';
import { enqueueRefusals, tooManyRunsRefusal } from './refusals.js';
import { documentRoute } from './registry.js';
import {
  analysisSchema,
  bulkReplaySchema,
  deliveryDetailSchema,
  deliverySchema,
  endpointSchema,
  endpointWithSecretSchema,
  enqueueResultSchema,
  healthSchema,
  page,
  pageQuery,
  pipelineSchema,
  replayAuditSchema,
  replayedDeliverySchema,
  rotatedSecretSchema,
  slowEndpointsSchema,
} from './responses.js';

const id = (description: string) => z.object({ id: z.string().meta({ description }) });
const endpointId = id('endpoint id (ep_…)');
const deliveryId = id('delivery id (dlv_…)');
const idempotencyKey = {
  name: 'Idempotency-Key',
  description: 'the same key with the same body answers 200 with the same ids; a different body is 409',
  schema: z.string().min(1).max(255),
};

// --- operations (no token) ---
documentRoute({
  method: 'get',
  path: '/',
  operationId: 'home',
  tag: 'pages',
  summary: 'Redirects to the admin page (/ui): the address the start banner prints',
  auth: false,
  responses: {
    302: {
      description: 'to /ui',
      headers: { location: { description: 'where to go', schema: { type: 'string', const: '/ui' } } },
    },
  },
});
documentRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'healthz',
  tag: 'operations',
  summary: 'Process is up',
  responses: { 200: { description: 'up', schema: z.object({ status: z.literal('ok') }) } },
});
documentRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'readyz',
  tag: 'operations',
  summary: 'Database reachable and writable, migrations applied',
  responses: {
    200: { description: 'ready', schema: z.object({ status: z.literal('ready') }) },
    503: { description: 'not ready (error code not_ready)' },
  },
});
documentRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  tag: 'operations',
  summary: 'Prometheus metrics (bearer token only when HOOKPOST_METRICS_TOKEN is set)',
  auth: false,
  responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain' } },
});

// --- endpoints ---
documentRoute({
  method: 'post',
  path: '/v1/endpoints',
  operationId: 'createEndpoint',
  tag: 'endpoints',
  summary: 'Create an endpoint',
  body: createSchema,
  responses: {
    201: { description: 'created; the secret is shown only here', schema: endpointWithSecretSchema },
  },
  // too_many_endpoints: the tenant has HOOKPOST_MAX_ENDPOINTS_PER_TENANT live endpoints.
  errors: [409],
});
documentRoute({
  method: 'get',
  path: '/v1/endpoints',
  operationId: 'listEndpoints',
  tag: 'endpoints',
  summary: 'List endpoints (keyset-paginated)',
  query: z.object({
    tenant_id: z.string().optional().meta({ description: "only this tenant's endpoints" }),
    ...pageQuery,
  }),
  responses: { 200: { description: 'a page of endpoints', schema: page(endpointSchema) } },
});
documentRoute({
  method: 'get',
  path: '/v1/endpoints/slow',
  operationId: 'listSlowEndpoints',
  tag: 'endpoints',
  summary: 'Endpoints whose p95 over the last 24 h is above a threshold, slowest first',
  query: z.object({ p95_ms: z.string().optional().meta({ description: 'threshold in ms, default 2000' }) }),
  responses: { 200: { description: 'slow endpoints', schema: slowEndpointsSchema } },
});
documentRoute({
  method: 'get',
  path: '/v1/endpoints/{id}',
  operationId: 'getEndpoint',
  tag: 'endpoints',
  summary: 'Read an endpoint',
  params: endpointId,
  responses: { 200: { description: 'the endpoint', schema: endpointSchema } },
  errors: [404],
});
documentRoute({
  method: 'patch',
  path: '/v1/endpoints/{id}',
  operationId: 'updateEndpoint',
  tag: 'endpoints',
  summary: 'Change an endpoint (enabled: false|true disables or enables it)',
  params: endpointId,
  body: patchSchema,
  responses: { 200: { description: 'the endpoint as changed', schema: endpointSchema } },
  errors: [404],
});
documentRoute({
  method: 'delete',
  path: '/v1/endpoints/{id}',
  operationId: 'deleteEndpoint',
  tag: 'endpoints',
  summary: 'Delete an endpoint',
  params: endpointId,
  responses: { 204: { description: 'deleted' } },
  errors: [404],
});
documentRoute({
  method: 'post',
  path: '/v1/endpoints/{id}/rotate-secret',
  operationId: 'rotateEndpointSecret',
  tag: 'endpoints',
  summary: 'New signing secret; the old one keeps signing alongside for the grace period',
  params: endpointId,
  responses: { 200: { description: 'the new secret, shown only here', schema: rotatedSecretSchema } },
  errors: [404],
});
documentRoute({
  method: 'get',
  path: '/v1/endpoints/{id}/health',
  operationId: 'getEndpointHealth',
  tag: 'endpoints',
  summary: 'Circuit state, failure streak and 24 h latency percentiles',
  params: endpointId,
  responses: { 200: { description: 'health', schema: healthSchema } },
  errors: [404],
});

// --- deliveries ---
documentRoute({
  method: 'post',
  path: '/v1/deliveries',
  operationId: 'enqueueDelivery',
  tag: 'deliveries',
  summary: 'Enqueue one event (to one endpoint, or fanned out to every matching one)',
  description: 'The payload is stored and sent byte for byte as written in the request.',
  headers: [idempotencyKey],
  body: itemSchema,
  responses: {
    200: { description: 'duplicate of an earlier request: the same ids', schema: enqueueResultSchema },
    202: { description: 'committed and queued', schema: enqueueResultSchema },
    ...enqueueRefusals,
  },
  errors: [404, 409],
});
documentRoute({
  method: 'post',
  path: '/v1/deliveries/batch',
  operationId: 'enqueueBatch',
  tag: 'deliveries',
  summary: 'Enqueue up to 1000 events in one request; results in order',
  headers: [{ ...idempotencyKey, description: 'item i gets the key "<key>:<i>"' }],
  // The handler validates the envelope first, then each item with batchItemSchema.
  body: batchSchema.extend({ items: z.array(batchItemSchema).min(1).max(1000) }),
  responses: {
    200: {
      description: 'every item a duplicate',
      schema: z.object({ results: z.array(enqueueResultSchema) }),
    },
    202: { description: 'committed and queued', schema: z.object({ results: z.array(enqueueResultSchema) }) },
    ...enqueueRefusals,
  },
  errors: [404, 409],
});
documentRoute({
  method: 'get',
  path: '/v1/deliveries',
  operationId: 'listDeliveries',
  tag: 'deliveries',
  summary: 'List deliveries, newest first (keyset-paginated)',
  query: z.object({
    status: z.enum(DELIVERY_STATUSES).optional(),
    endpoint_id: z.string().optional(),
    tenant_id: z.string().optional().meta({ description: "only this tenant's deliveries" }),
    event_type: z.string().optional(),
    message_id: z
      .string()
      .optional()
      .meta({ description: "one message's deliveries (the webhook-id a partner reports)" }),
    since: z.iso.datetime({ offset: true }).optional().meta({ description: 'created at or after' }),
    until: z.iso.datetime({ offset: true }).optional().meta({ description: 'created before' }),
    ...pageQuery,
  }),
  responses: { 200: { description: 'a page of deliveries', schema: page(deliverySchema) } },
});
documentRoute({
  method: 'get',
  path: '/v1/deliveries/{id}',
  operationId: 'getDelivery',
  tag: 'deliveries',
  summary: 'A delivery with every attempt and its replays',
  params: deliveryId,
  responses: { 200: { description: 'the delivery', schema: deliveryDetailSchema } },
  errors: [404],
});
documentRoute({
  method: 'post',
  path: '/v1/deliveries/{id}/replay',
  operationId: 'replayDelivery',
  tag: 'deliveries',
  summary: 'Requeue one dead-lettered or failed delivery (or resend a delivered one)',
  params: deliveryId,
  responses: { 202: { description: 'queued again', schema: replayedDeliverySchema } },
  errors: [404, 409],
});

// --- dead letters ---
documentRoute({
  method: 'get',
  path: '/v1/dead-letters/analysis',
  operationId: 'analyzeDeadLetters',
  tag: 'dead letters',
  summary: 'Per endpoint: what died, of what, which pattern, and advice',
  query: analysisQuery.extend({ limit: pageQuery.limit }),
  responses: { 200: { description: 'the analysis', schema: analysisSchema } },
});
documentRoute({
  method: 'post',
  path: '/v1/dead-letters/replay',
  operationId: 'bulkReplay',
  tag: 'dead letters',
  summary: 'Replay the dead letters matching a filter, paced (dry_run: count only)',
  body: replayBody,
  responses: {
    200: { description: 'dry run, or nothing matched', schema: bulkReplaySchema },
    202: { description: 'first batch committed; the rest continues', schema: bulkReplaySchema },
    ...tooManyRunsRefusal,
  },
  errors: [404],
});
documentRoute({
  method: 'get',
  path: '/v1/dead-letters/replays/{id}',
  operationId: 'getBulkReplay',
  tag: 'dead letters',
  summary: "A bulk replay's progress and audit",
  params: id('replay audit id (rpl_…)'),
  responses: { 200: { description: 'the audit', schema: replayAuditSchema } },
  errors: [404],
});

// --- pipeline ---
documentRoute({
  method: 'get',
  path: '/v1/pipeline',
  operationId: 'getPipeline',
  tag: 'operations',
  summary: 'The delivery pipeline at a glance',
  responses: { 200: { description: 'as of now', schema: pipelineSchema } },
});
