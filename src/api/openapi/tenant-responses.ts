/**
 * Response schemas of the tenancy routes (tenants, portal sessions, API keys, the audit log, the
 * event-type catalog), kept apart from the delivery and endpoint ones in responses.ts.
 */
import { z } from 'zod';
import { SCOPES } from '../../tenants/scope.js';
import { timestamp } from './responses.js';

const nullableTimestamp = timestamp.nullable();

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
  api_keys_revoked: z.number().int().meta({ description: 'its API keys and portal sessions, now 401' }),
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
    actor_key_id: z
      .string()
      .nullable()
      .meta({ description: "null for a tenant-bound caller when the key is not its tenant's" }),
    actor_name: z
      .string()
      .meta({ description: "a tenant-bound caller sees 'operator' for keys not its tenant's" }),
    action: z.string().meta({ examples: ['endpoint.created', 'portal_session.created'] }),
    resource_type: z.string(),
    resource_id: z.string(),
    tenant_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).meta({ description: 'field names and ids, never secrets' }),
    replay: z
      .object({
        kind: z.enum(['replay', 'resend']),
        state: z.string(),
        matched: z.number().int(),
        replayed: z.number().int().optional().describe('a replay: deliveries requeued so far'),
        resent: z.number().int().optional().describe('a resend: deliveries sent again so far'),
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
