/**
 * Response shapes for the document. The handlers build their JSON by hand, so these are written
 * from them; test/api/openapi-responses.test.ts parses real responses with these schemas, so a
 * field renamed in a handler fails a test instead of silently leaving the document wrong.
 */

import { z } from 'zod';
import { DEAD_LETTER_PATTERNS } from '../../deliveries/dead-letter-patterns.js';
import { DELIVERY_STATUSES } from '../../deliveries/read.js';
import { authSchema, legacySignatureSchema, tlsViewSchema } from '../endpoint-credentials.js';

/** A timestamp as the API writes it (shared with tenant-responses.ts). */
export const timestamp = z.string().meta({ format: 'date-time' });
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
    filter: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'the content filter (docs/filters.md); null: every event it subscribes to' }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    propagate_trace: z.boolean().meta({
      description: 'send a W3C traceparent header with each attempt (tracing on; docs/tracing.md)',
    }),
    signature_scheme: z
      .enum(['v1', 'v1a'])
      .optional()
      .meta({ description: 'v1: HMAC-SHA256 with the secret; v1a: Ed25519' }),
    public_key: z.string().nullable().optional().meta({ description: 'whpk_…, for v1a endpoints' }),
    auth: authSchema.nullable().optional().meta({ description: 'secret fields masked' }),
    tls: tlsViewSchema.nullable().optional(),
    legacy_signature: legacySignatureSchema.nullable().optional().meta({ description: 'secret masked' }),
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
    next_probe_at: nullableTimestamp.meta({
      description:
        'while the circuit is open: when it lets one probe through (opened_at + cooldown_seconds); ' +
        'half_open: when the probe went out; null while closed',
    }),
    parked_count: z.number().int().meta({
      description:
        'queued deliveries waiting for this circuit to close or the endpoint to be enabled (counted up to 10000)',
    }),
    p50_ms: z.number().nullable(),
    p95_ms: z.number().nullable(),
    p99_ms: z.number().nullable(),
    sample_count: z.number().int(),
    last_success_at: nullableTimestamp,
    last_failure_at: nullableTimestamp,
    failing_since: nullableTimestamp,
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    client_certificate_expires_at: nullableTimestamp.optional().meta({
      description: "the end of the endpoint's TLS client certificate; null without one",
    }),
    certificate_expiring: z.boolean().optional().meta({
      description: 'true from 14 days before the client certificate expires (and after)',
    }),
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

/** On a single delivery's reads (not lists): which delivery a held one waits for. */
const orderingHeadId = z.string().nullable().meta({
  description:
    'for parked: behind_ordering_key, the delivery at the head of its key, which it waits for; null otherwise',
});

export const deliveryDetailSchema = deliverySchema
  .extend({
    ordering_head_id: orderingHeadId,
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
    filtered: z.array(z.string()).meta({
      description:
        'endpoints that would have received the event but whose filter it did not match (no delivery); empty on a repeated request, where no filter ran',
    }),
    unrouted: z.literal(true).optional().meta({
      description:
        'present on a fan-out (no endpoint_id) that reached no endpoint: none of the tenant subscribes to the event type',
    }),
    warning: z
      .string()
      .optional()
      .meta({ description: 'with unrouted: what happened, for a person reading it' }),
  })
  .meta({ id: 'EnqueueResult' });

export const replayedDeliverySchema = deliverySchema.extend({
  ordering_head_id: orderingHeadId,
  audit_id: z.string(),
});

export const analysisSchema = z.object({
  hours: z.number(),
  endpoints: z.array(
    z.object({
      endpoint_id: z.string(),
      endpoint_url: z.string().nullable().meta({
        description:
          "the endpoint's URL as origin and path only: no query string or user info, where partners put tokens",
      }),
      endpoint_description: z.string().nullable(),
      dead_count: z.number().int(),
      primary_error: z.string().nullable(),
      primary_status_code: z.number().int().nullable(),
      error_counts: z
        .record(z.string(), z.number().int())
        .meta({ description: 'dead letters per last error class (http_503, connection_refused, …)' }),
      first_dead_at: timestamp,
      last_dead_at: timestamp,
      avg_attempts: z.number(),
      pattern: z.enum(DEAD_LETTER_PATTERNS).meta({
        description:
          'what the set has in common: a cause (hookpost_config: one of hookpost’s own settings; tls_failure, ' +
          'auth_failure, rate_limited, rejected, endpoint_moved), a shape in time (outage_cluster, gradual_drip), ' +
          'a dominant symptom (unreachable, server_errors, timeouts), or mixed',
      }),
      advice: z
        .string()
        .meta({ description: 'one line; names the setting to change when hookpost caused it' }),
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
  open_circuits: z
    .array(
      z.object({
        endpoint_id: z.string(),
        state: z.enum(['open', 'half_open']),
        next_probe_at: nullableTimestamp,
      }),
    )
    .meta({
      description:
        'endpoints among the matched whose circuit is not closed: their replayed deliveries wait for it (the next probe, or POST /v1/endpoints/{id}/close-circuit)',
    }),
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
  kind: z.enum(['replay', 'resend']).describe('a bulk replay of dead letters, or a resend of a time range'),
  matched: z.number().int(),
  replayed: z.number().int().optional().describe('a replay: deliveries requeued so far'),
  resent: z.number().int().optional().describe('a resend: deliveries sent again so far'),
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
    unrouted_last_hour: z.number().int().meta({
      description:
        'fan-out messages of the last hour that no endpoint subscribes to (accepted, delivered nowhere)',
    }),
  })
  .meta({ id: 'Pipeline' });

export function page<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

/** ?limit=&cursor= as every list takes them. */
export const pageQuery = {
  limit: z.string().regex(/^\d+$/).optional().meta({ description: '1 to 500, default 50' }),
  cursor: z.string().optional().meta({ description: 'next_cursor of the previous page' }),
};
