/**
 * The request bodies of /v1/endpoints (create and PATCH), validated, and what the endpoint store
 * takes from them. The OpenAPI document is generated from these schemas.
 */
import { z } from 'zod';
import { isMaskedHeaderValue } from '../endpoints/headers.js';
import { TENANT_ID } from '../tenants/scope.js';
import { credentialFields } from './endpoint-credentials.js';
import { filterField, filterFromRequest } from './filters.js';
import {
  checkHeaderNames as checkHeaderNameList,
  headerValueSchema,
  jsonObjectSchema,
  RESERVED_HEADERS,
} from './validation.js';

const headerValue = headerValueSchema();

function checkHeaderNames(headers: Record<string, unknown>, ctx: z.RefinementCtx) {
  checkHeaderNameList(headers, ctx, RESERVED_HEADERS);
}

const headersSchema = z.record(z.string(), headerValue).superRefine(checkHeaderNames);
/**
 * PATCH merges headers (endpoints/headers.ts): null removes one, null for the object removes all,
 * and the masked value GET showed (not a legal header value itself) keeps the stored one.
 */
const headersPatchSchema = z
  .record(z.string(), headerValueSchema(isMaskedHeaderValue).nullable())
  .superRefine(checkHeaderNames)
  .nullable();

const fields = {
  url: z.string().max(2048),
  description: z.string().max(1024),
  // An entry is an event type, or a prefix ending in `.*` (`order.*` matches `order.created`).
  event_types: z
    .array(
      z
        .string()
        .min(1)
        .max(256)
        .regex(/^[^*]*[^*.](\.\*)?$/, 'must be an event type or a prefix ending in .* (like order.*)'),
    )
    .max(256),
  rate_limit_per_second: z.number().positive().max(100_000).nullable(),
  max_in_flight: z.number().int().positive().max(10_000).nullable(),
  // Per-endpoint retry policy (null: the global default); the bounds are sql/0007's checks.
  max_attempts: z.number().int().min(1).max(50).nullable(),
  retry_base_seconds: z.number().min(0.1).max(86_400).nullable(),
  retry_cap_seconds: z.number().min(0.1).max(604_800).nullable(),
  headers: headersSchema,
  metadata: jsonObjectSchema(),
  filter: filterField,
  propagate_trace: z.boolean(),
};

export const createSchema = z.strictObject({
  tenant_id: z.string().regex(TENANT_ID, 'must be 1-128 of A-Za-z0-9._:-').optional(),
  url: fields.url,
  description: fields.description.optional(),
  event_types: fields.event_types.optional(),
  rate_limit_per_second: fields.rate_limit_per_second.optional(),
  max_in_flight: fields.max_in_flight.optional(),
  max_attempts: fields.max_attempts.optional(),
  retry_base_seconds: fields.retry_base_seconds.optional(),
  retry_cap_seconds: fields.retry_cap_seconds.optional(),
  headers: fields.headers.optional(),
  metadata: fields.metadata.optional(),
  filter: fields.filter.optional(),
  propagate_trace: fields.propagate_trace.optional(),
  signature_scheme: z.enum(['v1', 'v1a']).optional(),
  auth: credentialFields.auth.optional(),
  tls: credentialFields.tls.optional(),
  legacy_signature: credentialFields.legacy_signature.optional(),
});

// The signature scheme is fixed at creation (a partner's verifier is built for one), and so is
// the tenant.
export const patchSchema = createSchema
  .omit({ signature_scheme: true, tenant_id: true })
  .partial()
  .extend({ enabled: z.boolean().optional(), headers: headersPatchSchema.optional() });

export type EndpointPatchBody = z.infer<typeof patchSchema>;

/**
 * The settings a create and a PATCH body share, as the store takes them (not `url`, required only
 * in a create, nor `headers`, which a PATCH merges).
 */
export function settingsOf(body: EndpointPatchBody) {
  return {
    description: body.description,
    eventTypes: body.event_types,
    rateLimitPerSecond: body.rate_limit_per_second,
    maxInFlight: body.max_in_flight,
    propagateTrace: body.propagate_trace,
    maxAttempts: body.max_attempts,
    retryBaseSeconds: body.retry_base_seconds,
    retryCapSeconds: body.retry_cap_seconds,
    metadata: body.metadata,
    filter: filterFromRequest(body.filter),
    credentials: { auth: body.auth, tls: body.tls, legacy_signature: body.legacy_signature },
  };
}
