/** /v1/endpoints: create, list, read, update, delete, rotate the signing secret. */
import { Hono } from 'hono';
import type { Executor, Sql } from '../db/connect.js';
import { policyFor, type RetryPolicy, redeliveryWindowSeconds } from '../deliveries/retry-policy.js';
import { CredentialsError } from '../endpoints/credentials.js';
import { HeadersPatchError } from '../endpoints/headers.js';
import type { Endpoint, EndpointStore, SigningMaterial } from '../endpoints/store.js';
import { urlProblem } from '../endpoints/targets.js';
import { actorOf, recordAudit } from '../tenants/audit.js';
import { DEFAULT_TENANT, narrowScope } from '../tenants/scope.js';
import { lockTenant } from '../tenants/tenants.js';
import { type ApiEnv, callerOf } from './auth.js';
import { readJsonBody, validate } from './body.js';
import { createSchema, type EndpointPatchBody, patchSchema, settingsOf } from './endpoint-body.js';
import { checkEndpointCount } from './endpoint-count.js';
import { checkRetryPolicy } from './endpoint-retry-bounds.js';
import { HttpError, notFound } from './errors.js';
import { pageCursor, pageLimit } from './pagination.js';
import { tenantForWrite } from './tenant-arg.js';

const MAX_BODY_BYTES = 256 * 1024;

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
function checkUrls(body: EndpointPatchBody, allowPrivate: boolean) {
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
          ...settingsOf(body),
          tenantId,
          url: body.url,
          headers: body.headers,
          signatureScheme: body.signature_scheme,
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
        ...settingsOf(body),
        url: body.url,
        headers: body.headers,
        enabled: body.enabled,
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
