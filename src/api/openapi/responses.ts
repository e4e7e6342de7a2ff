/**
 * Response shapes for the document. The handlers build their JSON by hand, so these are written
 * from them; test/api/openapi-responses.test.ts parses real responses with these schemas, so a
 * field renamed in a handler fails a test instead of silently leaving the document wrong.
 */
import { z } from 'zod';
import { DELIVERY_STATUSES } from '../../deliveries/read.js';
import { SCOPES } from '../../tenants/scope.js';

const timestamp = z.string().meta({ format: 'date-time' });
const nullableTimestamp = timestamp.nullable();

export const endpointSchema = z
  .object({
    id: z.string().meta({ examples: ['ep_01J…'] }),
    tenant_id: z.string().optional().meta({ description: 'the tenant the endpoint belongs to' }),
    url: z.string(),
    description: z.string(),
    event_types: z.array(z.string()).meta({ description: 'empty: every event type' }),
    rate_limit_per_second: z.number().nullable(),
    max_in_flight: z.number().int().nullable(),
    max_attempts: z.number().int().nullable().meta({ description: 'null: HOOKPOST_MAX_ATTEMPTS' }),
    retry_base_seconds: z.number().nullable().meta({ description: 'null: HOOKPOST_RETRY_BASE_SECONDS' }),
    retry_cap_seconds: z.number().nullable().meta({ description: 'null: HOOKPOST_RETRY_CAP_SECONDS' }),
    redelivery_window_seconds: z.number().int().optional().meta({
      description:
        'GET /v1/endpoints/{id} only: longest time from enqueue to the end of the last automatic attempt; keep dedup records at least this long',
    }),
    headers: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.unknown()),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    signature_scheme: z
      .enum(['v1', 'v1a'])
      .optional()
      .meta({ description: 'v1: HMAC-SHA256 with the secret; v1a: Ed25519' }),
    public_key: z.string().nullable().optional().meta({ description: 'whpk_…, for v1a endpoints' }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Endpoint' });

const secret = z
  .string()
  .optional()
  .meta({ description: 'whsec_…, shown in full only here and on rotation (v1 endpoints)' });

export const endpointWithSecretSchema = endpointSchema.extend({ secret }).meta({ id: 'EndpointWithSecret' });

export const rotatedSecretSchema = z.object({
  id: z.string(),
  secret,
  public_key: z.string().optional().meta({ description: 'the new whpk_… key (v1a endpoints)' }),
  previous_secret_expires_in_seconds: z.number(),
});

export const healthSchema = z
  .object({
    endpoint_id: z.string(),
    state: z.enum(['closed', 'open', 'half_open']),
    consecutive_failures: z.number().int(),
    opened_at: nullableTimestamp,
    cooldown_seconds: z.number().nullable(),
    p50_ms: z.number().nullable(),
    p95_ms: z.number().nullable(),
    p99_ms: z.number().nullable(),
    sample_count: z.number().int(),
    last_success_at: nullableTimestamp,
    last_failure_at: nullableTimestamp,
    failing_since: nullableTimestamp,
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
  })
  .meta({ id: 'EndpointHealth' });

export const slowEndpointsSchema = z.object({
  p95_ms: z.number(),
  min_samples: z.number().int(),
  data: z.array(
    z.object({
      endpoint_id: z.string(),
      url: z.string(),
      p50_ms: z.number().nullable(),
      p95_ms: z.number().nullable(),
      p99_ms: z.number().nullable(),
      sample_count: z.number().int(),
    }),
  ),
});

export const latencySeriesSchema = z.object({
  endpoint_id: z.string(),
  hours: z.number(),
  step_minutes: z.number().int(),
  points: z.array(
    z.object({
      at: timestamp.meta({ description: 'start of the step' }),
      p50_ms: z.number().nullable(),
      p95_ms: z.number().nullable(),
      p99_ms: z.number().nullable(),
      sample_count: z.number().int(),
    }),
  ),
});

export const deliverySchema = z
  .object({
    id: z.string(),
    message_id: z.string(),
    endpoint_id: z.string(),
    tenant_id: z.string().optional(),
    event_type: z.string(),
    event_id: z.string().nullable(),
    status: z.enum(DELIVERY_STATUSES),
    attempt_count: z.number().int(),
    next_attempt_at: nullableTimestamp,
    last_status_code: z.number().int().nullable(),
    last_error_class: z.string().nullable(),
    last_error: z.string().nullable(),
    last_duration_ms: z.number().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    delivered_at: nullableTimestamp,
    dead_at: nullableTimestamp,
    payload_expired: z.boolean().meta({
      description: 'payload bytes and response snippets erased (expiry or expunge); a replay is 409',
    }),
    ordering_key: z
      .string()
      .nullable()
      .meta({ description: "the message's ordering_key; null when unkeyed" }),
    sequence: z.number().int().nullable().meta({
      description: 'the hookpost-sequence number within (endpoint, ordering_key); null when unkeyed',
    }),
    parked: z
      .enum(['behind_ordering_key', 'circuit_open', 'endpoint_disabled'])
      .nullable()
      .meta({
        description:
          'why a queued delivery waits with no next attempt time: an earlier delivery of its ordering key is ' +
          'not settled yet, its circuit is open, or its endpoint is disabled; null when it is not parked',
      }),
    next_probe_at: nullableTimestamp.meta({
      description: 'for parked: circuit_open, when the circuit releases its next probe',
    }),
  })
  .meta({ id: 'Delivery' });

export const attemptSchema = z
  .object({
    attempt: z.number().int(),
    started_at: timestamp,
    duration_ms: z.number(),
    status_code: z.number().int().nullable(),
    outcome: z.string(),
    error_class: z.string().nullable(),
    error: z.string().nullable(),
    response_snippet: z.string().nullable(),
  })
  .meta({ id: 'Attempt' });

export const deliveryDetailSchema = deliverySchema
  .extend({
    payload: z.unknown().meta({ description: 'the payload as JSON (null once erased)' }),
    attempts: z.array(attemptSchema).meta({ description: 'every attempt, in the order they started' }),
    replays: z.array(
      z.object({
        audit_id: z.string(),
        actor: z.string(),
        replayed_at: timestamp,
        previous_status: z.string(),
        previous_attempt_count: z.number().int(),
        previous_dead_at: nullableTimestamp,
      }),
    ),
  })
  .meta({ id: 'DeliveryDetail' });

export const enqueueResultSchema = z
  .object({
    message_id: z.string(),
    duplicate: z.boolean().meta({ description: 'true when an earlier identical request made these' }),
    deliveries: z.array(z.object({ id: z.string(), endpoint_id: z.string(), status: z.string() })),
  })
  .meta({ id: 'EnqueueResult' });

export const replayedDeliverySchema = deliverySchema.extend({ audit_id: z.string() });

export const analysisSchema = z.object({
  hours: z.number(),
  endpoints: z.array(
    z.object({
      endpoint_id: z.string(),
      dead_count: z.number().int(),
      primary_error: z.string().nullable(),
      primary_status_code: z.number().int().nullable(),
      first_dead_at: timestamp,
      last_dead_at: timestamp,
      avg_attempts: z.number(),
      pattern: z.enum(['outage_cluster', 'auth_failure', 'rate_limited', 'gradual_drip', 'mixed']),
      advice: z.string(),
    }),
  ),
});

export const bulkReplaySchema = z.object({
  audit_id: z.string().nullable(),
  dry_run: z.boolean(),
  state: z.string(),
  matched: z.number().int(),
  replayed: z.number().int(),
  skipped: z.number().int(),
});

export const replayAuditSchema = z.object({
  id: z.string(),
  actor: z.string(),
  actor_key_id: z.string().nullable(),
  tenant_id: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  finished_at: nullableTimestamp,
  state: z.string(),
  filter: z.record(z.string(), z.unknown()),
  dry_run: z.boolean(),
  matched: z.number().int(),
  replayed: z.number().int(),
  skipped: z.number().int(),
});

export const pipelineSchema = z
  .object({
    pending: z.number().int(),
    awaiting_retry: z.number().int(),
    in_flight: z.number().int(),
    dead_letter: z.number().int(),
    delivered_last_hour: z.number().int(),
    failed_last_hour: z.number().int(),
    oldest_pending_age_seconds: z.number(),
    avg_delivery_ms_last_hour: z.number().nullable(),
    open_circuits: z.number().int(),
  })
  .meta({ id: 'Pipeline' });

export const tenantSchema = z
  .object({
    id: z.string().meta({ examples: ['customer_42'] }),
    name: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Tenant' });

export const tenantWithCountsSchema = tenantSchema
  .extend({
    endpoints: z.number().int(),
    queued_deliveries: z.number().int(),
    dead_letters: z.number().int(),
  })
  .meta({ id: 'TenantWithCounts' });

export const tenantDeletedSchema = z.object({
  id: z.string(),
  deleted: z.literal(true),
  endpoints_deleted: z.number().int(),
  deliveries_cancelled: z.number().int(),
});

const scopeEnum = z.enum(SCOPES);

export const portalSessionSchema = z.object({
  id: z.string().meta({ description: 'the session key id (key_…), revocable with DELETE /v1/api-keys/{id}' }),
  url: z.string().meta({ description: '/portal signed in: the token is in the URL fragment' }),
  token: z.string().meta({ description: 'hpk_…, bound to the tenant' }),
  tenant_id: z.string(),
  scopes: z.array(scopeEnum),
  expires_at: timestamp,
});

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(['key', 'admin', 'portal']),
    prefix: z.string().meta({ description: 'the first characters of the key, to recognise it' }),
    scopes: z.array(scopeEnum),
    tenant_id: z.string().nullable(),
    rate_limit_per_second: z.number().nullable(),
    expires_at: nullableTimestamp,
    created_at: timestamp,
    created_by: z.string().nullable(),
    last_used_at: nullableTimestamp,
    revoked_at: nullableTimestamp,
  })
  .meta({ id: 'ApiKey' });

export const apiKeyCreatedSchema = apiKeySchema
  .extend({ key: z.string().meta({ description: 'hpk_…, shown only here' }) })
  .meta({ id: 'ApiKeyCreated' });

export const auditEntrySchema = z
  .object({
    id: z.string(),
    at: timestamp,
    actor_key_id: z.string(),
    actor_name: z.string(),
    action: z.string().meta({ examples: ['endpoint.created', 'portal_session.created'] }),
    resource_type: z.string(),
    resource_id: z.string(),
    tenant_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).meta({ description: 'field names and ids, never secrets' }),
    replay: z
      .object({
        state: z.string(),
        matched: z.number().int(),
        replayed: z.number().int(),
        skipped: z.number().int(),
      })
      .nullable(),
  })
  .meta({ id: 'AuditEntry' });

export const eventTypeSchema = z
  .object({
    name: z.string().meta({ examples: ['order.created'] }),
    description: z.string(),
    schema: z
      .union([z.record(z.string(), z.unknown()), z.boolean()])
      .nullable()
      .meta({ description: 'JSON Schema (draft 2020-12) payloads are validated against' }),
    example: z.unknown(),
    deprecated: z.boolean(),
    schema_version: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'EventType' });

/** `{data: [...], next_cursor}`: keyset pagination, pass next_cursor back as ?cursor=. */
export function page<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

/** ?limit=&cursor= as every list takes them. */
export const pageQuery = {
  limit: z.string().regex(/^\d+$/).optional().meta({ description: '1 to 500, default 50' }),
  cursor: z.string().optional().meta({ description: 'next_cursor of the previous page' }),
};
