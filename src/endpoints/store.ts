/** Endpoint rows: create, read, update, soft-delete and secret rotation. */
import type { Sql } from '../db/connect.js';
import {
  cancelWaiting,
  disableEndpoints,
  enableEndpoints,
  markCancelled,
} from '../deliveries/queue-state.js';
import { newId } from '../ids.js';
import { type TenantScope, tenantIs } from '../tenants/scope.js';
import { applyHeadersPatch, type HeadersPatch, maskHeaders } from './headers.js';
import { generateSecret, generateSigningKeyPair, type SecretBox } from './secrets.js';

export type SignatureScheme = 'v1' | 'v1a';

/** Active signing keys per endpoint, newest first; older ones beyond this expire at once. */
export const MAX_ACTIVE_SECRETS = 3;

export interface Endpoint {
  id: string;
  tenantId: string;
  url: string;
  description: string;
  eventTypes: string[];
  rateLimitPerSecond: number | null;
  maxInFlight: number | null;
  /** Per-endpoint retry overrides (null: the global HOOKPOST_* default). */
  maxAttempts: number | null;
  retryBaseSeconds: number | null;
  retryCapSeconds: number | null;
  /** Header names with masked values (maskValue): the values themselves are never read back. */
  headers: Record<string, string>;
  metadata: Record<string, unknown>;
  enabled: boolean;
  disabledReason: string | null;
  signatureScheme: SignatureScheme;
  /** The newest active `whpk_` public key of a v1a endpoint; null for v1. */
  publicKey: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EndpointInput {
  /** The tenant it belongs to; the route has made sure it exists. */
  tenantId: string;
  url: string;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  rateLimitPerSecond?: number | null | undefined;
  maxInFlight?: number | null | undefined;
  maxAttempts?: number | null | undefined;
  retryBaseSeconds?: number | null | undefined;
  retryCapSeconds?: number | null | undefined;
  headers?: Record<string, string> | undefined;
  metadata?: Record<string, unknown> | undefined;
  signatureScheme?: SignatureScheme | undefined;
}

/** `headers` merges (RFC 7396): a name set to null is removed, `null` for all removes every one. */
export type EndpointPatch = Partial<Omit<EndpointInput, 'headers' | 'signatureScheme' | 'tenantId'>> & {
  enabled?: boolean | undefined;
  headers?: HeadersPatch | undefined;
};

/** What create and rotate hand out once: a v1 secret, or a v1a endpoint's public key. */
export type SigningMaterial = { secret: string } | { publicKey: string };

interface EndpointRow {
  id: string;
  tenant_id: string;
  url: string;
  description: string;
  event_types: string[];
  rate_limit_per_second: number | null;
  max_in_flight: number | null;
  max_attempts: number | null;
  retry_base_seconds: number | null;
  retry_cap_seconds: number | null;
  headers: Record<string, string>;
  metadata: Record<string, unknown>;
  enabled: boolean;
  disabled_reason: string | null;
  signature_scheme: SignatureScheme;
  public_key: string | null;
  created_at: Date;
  updated_at: Date;
}

function toEndpoint(row: EndpointRow, box: SecretBox): Endpoint {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    rateLimitPerSecond: row.rate_limit_per_second,
    maxInFlight: row.max_in_flight,
    maxAttempts: row.max_attempts,
    retryBaseSeconds: row.retry_base_seconds,
    retryCapSeconds: row.retry_cap_seconds,
    headers: maskHeaders(box, row.headers),
    metadata: row.metadata,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    signatureScheme: row.signature_scheme,
    publicKey: row.public_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

// The public key is read with the row: a scalar subquery on endpoint_secrets' primary key.
const COLUMNS =
  'id, tenant_id, url, description, event_types, rate_limit_per_second, max_in_flight, max_attempts, retry_base_seconds, retry_cap_seconds, headers, metadata, enabled, disabled_reason, created_at, updated_at, signature_scheme, ' +
  '(SELECT s.public_key FROM endpoint_secrets s WHERE s.endpoint_id = endpoints.id AND (s.expires_at IS NULL OR s.expires_at > now()) ORDER BY s.created_at DESC LIMIT 1) AS public_key';

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

export class EndpointStore {
  constructor(
    private readonly sql: Sql,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * Creates the endpoint and its first signing key in one transaction. Returns the endpoint and,
   * once, the v1 secret or the v1a public key (the v1a private key never leaves the database).
   */
  async create(input: EndpointInput): Promise<{ endpoint: Endpoint; signing: SigningMaterial }> {
    const id = newId('ep_');
    const scheme = input.signatureScheme ?? 'v1';
    const key = newSigningKey(scheme, this.secrets);
    const headers = applyHeadersPatch(this.secrets, {}, input.headers ?? {});
    const row = await this.sql.begin(async (tx) => {
      const [created] = await tx<EndpointRow[]>`
        INSERT INTO endpoints (id, tenant_id, url, description, event_types, rate_limit_per_second, max_in_flight,
                               max_attempts, retry_base_seconds, retry_cap_seconds, headers, metadata, signature_scheme)
        VALUES (${id}, ${input.tenantId}, ${input.url}, ${input.description ?? ''}, ${input.eventTypes ?? []},
                ${input.rateLimitPerSecond ?? null}, ${input.maxInFlight ?? null}, ${input.maxAttempts ?? null},
                ${input.retryBaseSeconds ?? null}, ${input.retryCapSeconds ?? null},
                ${tx.json(headers)}, ${tx.json((input.metadata ?? {}) as never)}, ${scheme})
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

  /** Applies the given fields only. Re-enabling clears the disabled reason and resets the breaker. */
  async update(scope: TenantScope, id: string, patch: EndpointPatch): Promise<Endpoint | undefined> {
    return this.sql.begin(async (tx) => {
      const [current] = await tx<EndpointRow[]>`
        SELECT ${tx.unsafe(COLUMNS)} FROM endpoints
        WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'tenant_id')} FOR UPDATE`;
      if (!current) return undefined;
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
        headers: applyHeadersPatch(this.secrets, current.headers, patch.headers),
        metadata: patch.metadata ?? current.metadata,
        enabled: patch.enabled ?? current.enabled,
      };
      const [row] = await tx<EndpointRow[]>`
        UPDATE endpoints SET
          url = ${set.url}, description = ${set.description}, event_types = ${set.event_types},
          rate_limit_per_second = ${set.rate_limit_per_second}, max_in_flight = ${set.max_in_flight},
          max_attempts = ${set.max_attempts}, retry_base_seconds = ${set.retry_base_seconds},
          retry_cap_seconds = ${set.retry_cap_seconds},
          headers = ${tx.json(set.headers)}, metadata = ${tx.json(set.metadata as never)},
          updated_at = now()
        WHERE id = ${id}
        RETURNING ${tx.unsafe(COLUMNS)}`;
      // Enabling and disabling are queue-state transitions (deliveries/queue-state.ts): they also
      // park or release the endpoint's queued deliveries and reset its breaker.
      if (set.enabled && !current.enabled) await enableEndpoints(tx, [id]);
      else if (!set.enabled && current.enabled)
        await disableEndpoints(tx, tx`SELECT ${id}::text AS id, 'disabled by API'::text AS reason`);
      else return toEndpoint(row!, this.secrets);
      const [changed] = await tx<EndpointRow[]>`SELECT ${tx.unsafe(COLUMNS)} FROM endpoints WHERE id = ${id}`;
      return toEndpoint(changed!, this.secrets);
    });
  }

  /**
   * Soft delete: the endpoint disappears from the API and fan-out, its queued deliveries are
   * cancelled, and its delivery history stays readable.
   */
  async delete(scope: TenantScope, id: string): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const rows = await tx`
        UPDATE endpoints SET deleted_at = now(), enabled = false, disabled_reason = 'deleted', updated_at = now()
        WHERE id = ${id} AND deleted_at IS NULL AND ${tenantIs(tx, scope, 'tenant_id')} RETURNING id`;
      if (rows.length === 0) return false;
      // Waiting deliveries are cancelled now; those in flight are cancelled when they come back
      // (deliveries/queue-state.ts, returnFate), unless they were delivered or dead-lettered.
      await tx`
        WITH dropped AS (${cancelWaiting(tx, tx`SELECT ${id}::text`)})
        ${markCancelled(tx, tx`SELECT delivery_id FROM dropped`)}`;
      return true;
    });
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
