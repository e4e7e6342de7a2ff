/** Endpoint rows: create, read, update, soft-delete and secret rotation. */
import type { Executor, Fragment, Sql } from '../db/connect.js';
import type { CompiledFilter } from '../filters/jsonpath.js';
import { newId } from '../ids.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';
import { checkCredentialHeaders } from './credential-headers.js';
import {
  applyCredentialsPatch,
  dropForNewOrigin,
  isOriginChange,
  NO_CREDENTIALS,
  notSuppliedAgain,
  type StoredCredentials,
} from './credentials.js';
import {
  COLUMNS,
  type Endpoint,
  type EndpointInput,
  type EndpointPatch,
  type EndpointRow,
  MAX_ACTIVE_SECRETS,
  type SignatureScheme,
  type SigningMaterial,
  toEndpoint,
  type UpdatedEndpoint,
} from './endpoint-record.js';
import { applyHeadersPatch } from './headers.js';
import { deleteEndpoints, disableEndpoints, enableEndpoints } from './lifecycle.js';
import { generateSecret, generateSigningKeyPair, type SecretBox } from './secrets.js';
import { clientCertificateExpiry } from './tls-material.js';

export {
  type Endpoint,
  type EndpointInput,
  type EndpointPatch,
  MAX_ACTIVE_SECRETS,
  type SignatureScheme,
  type SigningMaterial,
  type UpdatedEndpoint,
} from './endpoint-record.js';

/** The `filter, filter_path` values of a filter (both NULL for none). */
function filterColumns(tx: Executor, filter: CompiledFilter | null): Fragment {
  if (filter === null) return tx`NULL::jsonb, NULL::jsonpath`;
  return tx`${tx.json(filter.document as never)}::jsonb, ${filter.path}::jsonpath`;
}

/** A new signing secret (v1) or key pair (v1a): what is stored sealed, and what is shown once. */
function newSigningKey(scheme: SignatureScheme, box: SecretBox) {
  if (scheme === 'v1a') {
    const pair = generateSigningKeyPair();
    return {
      sealed: box.seal(pair.privateKey),
      publicKey: pair.publicKey,
      shown: { publicKey: pair.publicKey },
    };
  }
  const secret = generateSecret();
  return { sealed: box.seal(secret), publicKey: null, shown: { secret } };
}

/** A jsonb parameter, or SQL NULL for an absent credential. */
function jsonOrNull(sql: Executor, value: object | null) {
  return value === null ? null : sql.json(value as never);
}

export class EndpointStore {
  constructor(
    private readonly sql: Sql,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * Creates the endpoint and its first signing key in one transaction. Returns the endpoint and,
   * once, the v1 secret or the v1a public key (the v1a private key never leaves the database).
   * `admit` runs first in that transaction (the tenant's lock and limits, tenants/limits.ts): what
   * it throws rolls the create back.
   */
  async create(
    input: EndpointInput,
    options: { admit?: (tx: Executor) => Promise<void> } = {},
  ): Promise<{ endpoint: Endpoint; signing: SigningMaterial }> {
    const id = newId('ep_');
    const scheme = input.signatureScheme ?? 'v1';
    const key = newSigningKey(scheme, this.secrets);
    const headers = applyHeadersPatch(this.secrets, {}, input.headers ?? {});
    const credentials = applyCredentialsPatch(this.secrets, NO_CREDENTIALS, input.credentials ?? {});
    checkCredentialHeaders(input.url, headers, credentials);
    const row = await this.sql.begin(async (tx) => {
      await options.admit?.(tx);
      const [created] = await tx<EndpointRow[]>`
        INSERT INTO endpoints (id, tenant_id, url, description, event_types, rate_limit_per_second, max_in_flight,
                               max_attempts, retry_base_seconds, retry_cap_seconds, headers, metadata, signature_scheme,
                               auth, tls, legacy_signature, client_certificate_expires_at, filter, filter_path,
                               propagate_trace)
        VALUES (${id}, ${input.tenantId}, ${input.url}, ${input.description ?? ''}, ${input.eventTypes ?? []},
                ${input.rateLimitPerSecond ?? null}, ${input.maxInFlight ?? null}, ${input.maxAttempts ?? null},
                ${input.retryBaseSeconds ?? null}, ${input.retryCapSeconds ?? null},
                ${tx.json(headers)}, ${tx.json((input.metadata ?? {}) as never)}, ${scheme},
                ${jsonOrNull(tx, credentials.auth)}, ${jsonOrNull(tx, credentials.tls)},
                ${jsonOrNull(tx, credentials.legacy_signature)},
                ${clientCertificateExpiry(credentials.tls) ?? null}, ${filterColumns(tx, input.filter ?? null)},
                ${input.propagateTrace ?? false})
        RETURNING ${tx.unsafe(COLUMNS)}`;
      await tx`INSERT INTO endpoint_secrets (endpoint_id, secret, public_key) VALUES (${id}, ${key.sealed}, ${key.publicKey})`;
      await tx`INSERT INTO endpoint_health (endpoint_id) VALUES (${id})`;
      return created!;
    });
    return { endpoint: toEndpoint({ ...row, public_key: key.publicKey }, this.secrets), signing: key.shown };
  }

  /** Every read and change below takes the caller's scope: another tenant's id is not found. */
  async get(scope: TenantScope, id: string): Promise<Endpoint | undefined> {
    const [row] = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints
      WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(this.sql, scope, 'tenant_id')}`;
    return row && toEndpoint(row, this.secrets);
  }

  async getMany(scope: TenantScope, ids: string[]): Promise<Endpoint[]> {
    if (ids.length === 0) return [];
    const rows = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints
      WHERE id = ANY(${ids}::text[]) AND deleted_at IS NULL AND ${tenantIs(this.sql, scope, 'tenant_id')}`;
    return rows.map((row) => toEndpoint(row, this.secrets));
  }

  /** Keyset page in creation order. */
  async list(scope: TenantScope, limit: number, after?: string): Promise<Endpoint[]> {
    const rows = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints
      WHERE deleted_at IS NULL AND id > ${after ?? ''} AND ${tenantIs(this.sql, scope, 'tenant_id')}
      ORDER BY id LIMIT ${limit}`;
    return rows.map((row) => toEndpoint(row, this.secrets));
  }

  /**
   * Applies the given fields only. Re-enabling clears the disabled reason and resets the breaker.
   * A `url` on another origin drops the stored credentials the same patch does not supply again
   * (endpoints/credentials.ts dropForNewOrigin).
   */
  async update(scope: TenantScope, id: string, patch: EndpointPatch): Promise<UpdatedEndpoint | undefined> {
    return this.sql.begin(async (tx) => {
      const [current] = await tx<EndpointRow[]>`
        SELECT ${tx.unsafe(COLUMNS)} FROM endpoints
        WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'tenant_id')} FOR UPDATE`;
      if (!current) return undefined;
      // Moving to another origin: what the patch builds on has no secret of the old host.
      const moved = isOriginChange(current.url, patch.url)
        ? dropForNewOrigin(current, current.headers)
        : { credentials: current as StoredCredentials, headers: current.headers, dropped: [] };
      const droppedCredentials = notSuppliedAgain(moved.dropped, patch.headers, patch.credentials);
      const credentials = applyCredentialsPatch(this.secrets, moved.credentials, patch.credentials ?? {});
      const set = {
        url: patch.url ?? current.url,
        description: patch.description ?? current.description,
        event_types: patch.eventTypes ?? current.event_types,
        rate_limit_per_second:
          patch.rateLimitPerSecond === undefined ? current.rate_limit_per_second : patch.rateLimitPerSecond,
        max_in_flight: patch.maxInFlight === undefined ? current.max_in_flight : patch.maxInFlight,
        max_attempts: patch.maxAttempts === undefined ? current.max_attempts : patch.maxAttempts,
        retry_base_seconds:
          patch.retryBaseSeconds === undefined ? current.retry_base_seconds : patch.retryBaseSeconds,
        retry_cap_seconds:
          patch.retryCapSeconds === undefined ? current.retry_cap_seconds : patch.retryCapSeconds,
        // Merged in the locked row, sealed value by value; kept values are not re-read.
        headers: applyHeadersPatch(this.secrets, moved.headers, patch.headers),
        metadata: patch.metadata ?? current.metadata,
        enabled: patch.enabled ?? current.enabled,
        propagate_trace: patch.propagateTrace ?? current.propagate_trace,
      };
      checkCredentialHeaders(set.url, set.headers, credentials);
      const [row] = await tx<EndpointRow[]>`
        UPDATE endpoints SET
          url = ${set.url}, description = ${set.description}, event_types = ${set.event_types},
          rate_limit_per_second = ${set.rate_limit_per_second}, max_in_flight = ${set.max_in_flight},
          max_attempts = ${set.max_attempts}, retry_base_seconds = ${set.retry_base_seconds},
          retry_cap_seconds = ${set.retry_cap_seconds}, propagate_trace = ${set.propagate_trace},
          headers = ${tx.json(set.headers)}, metadata = ${tx.json(set.metadata as never)},
          auth = ${jsonOrNull(tx, credentials.auth)}, tls = ${jsonOrNull(tx, credentials.tls)},
          legacy_signature = ${jsonOrNull(tx, credentials.legacy_signature)},
          client_certificate_expires_at = ${clientCertificateExpiry(credentials.tls) ?? null},
          -- a new certificate is announced afresh when its own end comes near
          certificate_warned_at = CASE WHEN client_certificate_expires_at
            IS NOT DISTINCT FROM ${clientCertificateExpiry(credentials.tls) ?? null}::timestamptz
            THEN certificate_warned_at END,
          ${patch.filter === undefined ? tx`` : tx`(filter, filter_path) = (${filterColumns(tx, patch.filter)}),`}
          updated_at = now()
        WHERE id = ${id}
        RETURNING ${tx.unsafe(COLUMNS)}`;
      // Enabling and disabling are lifecycle transitions (lifecycle.ts): they also park or unpark
      // the endpoint's queued deliveries, and enabling resets its breaker.
      if (set.enabled && !current.enabled) await enableEndpoints(tx, [id]);
      else if (!set.enabled && current.enabled)
        await disableEndpoints(tx, tx`SELECT ${id}::text AS id, 'disabled by API'::text AS reason`);
      else return { endpoint: toEndpoint(row!, this.secrets), droppedCredentials };
      const [changed] = await tx<EndpointRow[]>`SELECT ${tx.unsafe(COLUMNS)} FROM endpoints WHERE id = ${id}`;
      return { endpoint: toEndpoint(changed!, this.secrets), droppedCredentials };
    });
  }

  /**
   * Soft delete (lifecycle.ts deleteEndpoints): the endpoint disappears from the API and fan-out,
   * its queued deliveries are cancelled, and its delivery history stays readable.
   */
  async delete(scope: TenantScope, id: string): Promise<boolean> {
    const { ids } = await deleteEndpoints(
      this.sql,
      this.sql`id = ${id} AND ${tenantIs(this.sql, scope, 'tenant_id')}`,
    );
    return ids.length > 0;
  }

  /**
   * Adds a new signing key of the endpoint's scheme; the current ones keep signing for
   * `graceSeconds`, then expire. Rotating again within the grace period keeps at most
   * MAX_ACTIVE_SECRETS active (the oldest expire now), so the signature header stays bounded.
   */
  async rotateSecret(
    scope: TenantScope,
    id: string,
    graceSeconds: number,
  ): Promise<SigningMaterial | undefined> {
    return this.sql.begin(async (tx) => {
      const [endpoint] = await tx<{ signature_scheme: SignatureScheme }[]>`
        SELECT signature_scheme FROM endpoints
        WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'tenant_id')} FOR UPDATE`;
      if (!endpoint) return undefined;
      const key = newSigningKey(endpoint.signature_scheme, this.secrets);
      // Rows that have expired are of no further use: drop them so rotations do not pile up.
      await tx`DELETE FROM endpoint_secrets WHERE endpoint_id = ${id} AND expires_at <= now()`;
      await tx`
        UPDATE endpoint_secrets SET expires_at = now() + make_interval(secs => ${graceSeconds})
        WHERE endpoint_id = ${id} AND (expires_at IS NULL OR expires_at > now() + make_interval(secs => ${graceSeconds}))`;
      await tx`INSERT INTO endpoint_secrets (endpoint_id, secret, public_key) VALUES (${id}, ${key.sealed}, ${key.publicKey})`;
      await tx`
        UPDATE endpoint_secrets SET expires_at = now()
        WHERE endpoint_id = ${id} AND expires_at > now() AND created_at NOT IN (
          SELECT created_at FROM endpoint_secrets WHERE endpoint_id = ${id} AND (expires_at IS NULL OR expires_at > now())
          ORDER BY created_at DESC LIMIT ${MAX_ACTIVE_SECRETS})`;
      await tx`UPDATE endpoints SET updated_at = now() WHERE id = ${id}`;
      return key.shown;
    });
  }
}
