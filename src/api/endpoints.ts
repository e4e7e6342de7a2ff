/** /v1/endpoints: create, list, read, update, delete, rotate the signing secret. */
import { Hono } from 'hono';
import { z } from 'zod';
import type { Executor, Sql } from '../db/connect.js';
import { policyFor, type RetryPolicy, redeliveryWindowSeconds } from '../deliveries/retry-policy.js';
import { CredentialsError } from '../endpoints/credentials.js';
import { HeadersPatchError, isMaskedHeaderValue } from '../endpoints/headers.js';
import type { Endpoint, EndpointStore, SigningMaterial } from '../endpoints/store.js';
import { urlProblem } from '../endpoints/targets.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { DEFAULT_TENANT, narrowScope, TENANT_ID } from '../tenants/scope.js';
import { lockTenant } from '../tenants/tenants.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { checkEndpointCount } from './endpoint-count.js';
import { credentialFields } from './endpoint-credentials.js';
import { checkRetryPolicy } from './endpoint-retry-bounds.js';
import { HttpError, notFound } from './errors.js';
import { filterField, filterFromRequest } from './filters.js';
import { pageCursor, pageLimit } from './pagination.js';
import { tenantForWrite } from './tenant-arg.js';
import {
  checkHeaderNames as checkHeaderNameList,
  headerValueSchema,
  jsonObjectSchema,
} from './validation.js';

const MAX_BODY_BYTES = 256 * 1024;

/** Headers hookpost sets itself; an endpoint may not override them. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);
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

/** The public JSON shape of an endpoint (snake_case, as in the contract). */
export function endpointJson(e: Endpoint, retry?: { policy: RetryPolicy; requestTimeoutMs: number }) {
  return {
    id: e.id,
    tenant_id: e.tenantId,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    rate_limit_per_second: e.rateLimitPerSecond,
    max_in_flight: e.maxInFlight,
    max_attempts: e.maxAttempts,
    retry_base_seconds: e.retryBaseSeconds,
    retry_cap_seconds: e.retryCapSeconds,
    // Only the single-endpoint read shows the window (README, "Recovering missed events").
    ...(retry && {
      redelivery_window_seconds: redeliveryWindowSeconds(policyFor(retry.policy, e), retry.requestTimeoutMs),
    }),
    headers: e.headers,
    metadata: e.metadata,
    filter: e.filter,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    propagate_trace: e.propagateTrace,
    signature_scheme: e.signatureScheme,
    public_key: e.publicKey,
    auth: e.credentials.auth,
    tls: e.credentials.tls,
    legacy_signature: e.credentials.legacy_signature,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  };
}

function checkUrl(url: string | undefined, allowPrivate: boolean, field = 'url') {
  if (url === undefined) return;
  const problem = urlProblem(url, allowPrivate);
  if (problem)
    throw new HttpError(400, 'validation_failed', `${field}: ${problem}`, [{ field, message: problem }]);
}

/** The URL and, with OAuth, the token URL: both are fetched from the dispatcher, both vetted. */
function checkUrls(body: z.infer<typeof patchSchema>, allowPrivate: boolean) {
  checkUrl(body.url, allowPrivate);
  if (body.auth?.type === 'oauth2_client_credentials')
    checkUrl(body.auth.token_url, allowPrivate, 'auth.token_url');
}

/**
 * Header merges and credentials that cannot apply (a masked value for a new header or secret,
 * too many headers, a key that does not match its certificate) are a 400 naming the field.
 */
async function withHeaderProblems<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof HeadersPatchError) && !(error instanceof CredentialsError)) throw error;
    throw new HttpError(400, 'validation_failed', error.message, [
      { field: error.field, message: error.message.slice(error.field.length + 2) },
    ]);
  }
}

/** The credentials part of a create or PATCH body, as the store takes it. */
function credentialsOf(body: z.infer<typeof patchSchema>) {
  return { auth: body.auth, tls: body.tls, legacy_signature: body.legacy_signature };
}

/** The once-only part of a create or rotate answer: `secret` (v1) or `public_key` (v1a). */
function signingJson(signing: SigningMaterial) {
  return 'secret' in signing ? { secret: signing.secret } : { public_key: signing.publicKey };
}

export interface EndpointRoutesDeps {
  sql: Sql;
  endpoints: EndpointStore;
  allowPrivateTargets: boolean;
  secretGraceSeconds: number;
  /** The global retry policy and attempt timeout, for `redelivery_window_seconds`. */
  retryPolicy: RetryPolicy;
  requestTimeoutMs: number;
  /** Live endpoints one tenant may have (HOOKPOST_MAX_ENDPOINTS_PER_TENANT). */
  maxEndpointsPerTenant: number;
}

/** Which fields a PATCH changed, for the audit log (names only: header values may be credentials). */
function changedFields(body: Record<string, unknown>): string[] {
  return Object.keys(body).filter((k) => body[k] !== undefined);
}

export function endpointRoutes(deps: EndpointRoutesDeps) {
  const app = new Hono<ApiEnv>();

  app.post('/', async (c) => {
    const body = validate(createSchema, (await readJsonBody(c, MAX_BODY_BYTES)).value);
    checkUrls(body, deps.allowPrivateTargets);
    const caller = callerOf(c);
    checkRetryPolicy(caller, deps.retryPolicy, body);
    const tenantId = tenantForWrite(caller, body.tenant_id) ?? DEFAULT_TENANT;
    // Created on first use; a deleted tenant stays deleted (only a PUT brings it back), and its
    // row stays locked until the create commits, so a racing delete of the tenant waits for it.
    // The count runs under that lock too, so two racing creates cannot both take the last place.
    const admit = async (tx: Executor) => {
      if ((await lockTenant(tx, tenantId)) === 'deleted') notFound('tenant', tenantId);
      await checkEndpointCount(tx, tenantId, deps.maxEndpointsPerTenant);
    };
    const { endpoint, signing } = await withHeaderProblems(() =>
      deps.endpoints.create(
        {
          tenantId,
          url: body.url,
          description: body.description,
          eventTypes: body.event_types,
          rateLimitPerSecond: body.rate_limit_per_second,
          maxInFlight: body.max_in_flight,
          propagateTrace: body.propagate_trace,
          maxAttempts: body.max_attempts,
          retryBaseSeconds: body.retry_base_seconds,
          retryCapSeconds: body.retry_cap_seconds,
          headers: body.headers,
          metadata: body.metadata,
          filter: filterFromRequest(body.filter),
          signatureScheme: body.signature_scheme,
          credentials: credentialsOf(body),
        },
        { admit },
      ),
    );
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'endpoint.created',
      resourceType: 'endpoint',
      resourceId: endpoint.id,
      tenantId,
      details: { url_host: new URL(endpoint.url).host },
    });
    return c.json({ ...endpointJson(endpoint), ...signingJson(signing) }, 201);
  });

  app.get('/', async (c) => {
    const limit = pageLimit(c.req.query('limit'));
    const scope = narrowScope(callerOf(c), c.req.query('tenant_id'));
    if (!scope) return c.json({ data: [], next_cursor: null });
    const rows = await deps.endpoints.list(scope, limit + 1, pageCursor(c.req.query('cursor'), 'ep_'));
    const page = rows.slice(0, limit);
    return c.json({
      data: page.map((e) => endpointJson(e)),
      next_cursor: rows.length > limit ? page.at(-1)!.id : null,
    });
  });

  app.get('/:id', async (c) => {
    const endpoint = await deps.endpoints.get(callerOf(c), c.req.param('id'));
    const retry = { policy: deps.retryPolicy, requestTimeoutMs: deps.requestTimeoutMs };
    return endpoint ? c.json(endpointJson(endpoint, retry)) : notFound('endpoint', c.req.param('id'));
  });

  app.patch('/:id', async (c) => {
    const body = validate(patchSchema, (await readJsonBody(c, MAX_BODY_BYTES)).value);
    checkUrls(body, deps.allowPrivateTargets);
    const caller = callerOf(c);
    if (body.retry_base_seconds !== undefined || body.retry_cap_seconds !== undefined) {
      const current = await deps.endpoints.get(caller, c.req.param('id'));
      if (current) checkRetryPolicy(caller, deps.retryPolicy, body, current);
    } else {
      checkRetryPolicy(caller, deps.retryPolicy, body);
    }
    const updated = await withHeaderProblems(() =>
      deps.endpoints.update(caller, c.req.param('id'), {
        url: body.url,
        description: body.description,
        eventTypes: body.event_types,
        rateLimitPerSecond: body.rate_limit_per_second,
        maxInFlight: body.max_in_flight,
        propagateTrace: body.propagate_trace,
        maxAttempts: body.max_attempts,
        retryBaseSeconds: body.retry_base_seconds,
        retryCapSeconds: body.retry_cap_seconds,
        headers: body.headers,
        metadata: body.metadata,
        filter: filterFromRequest(body.filter),
        enabled: body.enabled,
        credentials: credentialsOf(body),
      }),
    );
    if (!updated) notFound('endpoint', c.req.param('id'));
    const { endpoint, droppedCredentials } = updated;
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'endpoint.updated',
      resourceType: 'endpoint',
      resourceId: endpoint.id,
      tenantId: endpoint.tenantId,
      // Names only: what a move to another origin dropped, never a value.
      details: {
        fields: changedFields(body),
        ...(droppedCredentials.length > 0 && { dropped_credentials: droppedCredentials }),
      },
    });
    return c.json(endpointJson(endpoint));
  });

  app.delete('/:id', async (c) => {
    const caller = callerOf(c);
    const id = c.req.param('id');
    const endpoint = await deps.endpoints.get(caller, id);
    if (!endpoint || !(await deps.endpoints.delete(caller, id))) notFound('endpoint', id);
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'endpoint.deleted',
      resourceType: 'endpoint',
      resourceId: id,
      tenantId: endpoint.tenantId,
    });
    return c.body(null, 204);
  });

  app.post('/:id/rotate-secret', async (c) => {
    const caller = callerOf(c);
    const id = c.req.param('id');
    const endpoint = await deps.endpoints.get(caller, id);
    const signing = endpoint && (await deps.endpoints.rotateSecret(caller, id, deps.secretGraceSeconds));
    if (!endpoint || !signing) notFound('endpoint', id);
    await recordAudit(deps.sql, actorOf(caller), {
      action: 'endpoint.secret_rotated',
      resourceType: 'endpoint',
      resourceId: id,
      tenantId: endpoint.tenantId,
      details: { previous_secret_expires_in_seconds: deps.secretGraceSeconds },
    });
    return c.json({
      id: c.req.param('id'),
      ...signingJson(signing),
      previous_secret_expires_in_seconds: deps.secretGraceSeconds,
    });
  });

  return app;
}
