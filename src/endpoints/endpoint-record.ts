/**
 * An endpoint as the store hands it out (Endpoint), as it is written (EndpointInput, EndpointPatch),
 * and as it is read from its row (COLUMNS, toEndpoint): secrets masked, credentials as reads show
 * them.
 */
import type { CompiledFilter } from '../filters/jsonpath.js';
import type { CredentialsPatch, CredentialsView, StoredCredentials } from './credentials.js';
import { viewCredentials } from './credentials.js';
import { type HeadersPatch, maskHeaders } from './headers.js';
import type { SecretBox } from './secrets.js';

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
  /** The content filter as validated (docs/filters.md); null: every event it subscribes to. */
  filter: Record<string, unknown> | null;
  enabled: boolean;
  disabledReason: string | null;
  /** Send `traceparent` with its attempts (tracing on; docs/tracing.md). */
  propagateTrace: boolean;
  signatureScheme: SignatureScheme;
  /** The newest active `whpk_` public key of a v1a endpoint; null for v1. */
  publicKey: string | null;
  /** `auth`, `tls`, `legacy_signature` as reads show them (endpoints/credentials.ts). */
  credentials: CredentialsView;
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
  propagateTrace?: boolean | undefined;
  maxAttempts?: number | null | undefined;
  retryBaseSeconds?: number | null | undefined;
  retryCapSeconds?: number | null | undefined;
  headers?: Record<string, string> | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** A filter and its compiled path (filters/jsonpath.ts compileFilter); null or absent: none. */
  filter?: CompiledFilter | null | undefined;
  signatureScheme?: SignatureScheme | undefined;
  /** `auth`, `tls`, `legacy_signature` as written (undefined: none / unchanged). */
  credentials?: CredentialsPatch | undefined;
}

/** `headers` merges (RFC 7396): a name set to null is removed, `null` for all removes every one. */
export type EndpointPatch = Partial<Omit<EndpointInput, 'headers' | 'signatureScheme' | 'tenantId'>> & {
  enabled?: boolean | undefined;
  headers?: HeadersPatch | undefined;
};

/** What create and rotate hand out once: a v1 secret, or a v1a endpoint's public key. */
export type SigningMaterial = { secret: string } | { publicKey: string };

/** An update's result: the endpoint, and what a move to another origin dropped (names only). */
export interface UpdatedEndpoint {
  endpoint: Endpoint;
  droppedCredentials: string[];
}

export interface EndpointRow extends StoredCredentials {
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
  filter: Record<string, unknown> | null;
  enabled: boolean;
  disabled_reason: string | null;
  propagate_trace: boolean;
  signature_scheme: SignatureScheme;
  public_key: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toEndpoint(row: EndpointRow, box: SecretBox): Endpoint {
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
    filter: row.filter,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    propagateTrace: row.propagate_trace,
    signatureScheme: row.signature_scheme,
    publicKey: row.public_key,
    credentials: viewCredentials(box, row),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

// The public key is read with the row: a scalar subquery on endpoint_secrets' primary key.
export const COLUMNS =
  'id, tenant_id, url, description, event_types, rate_limit_per_second, max_in_flight, max_attempts, retry_base_seconds, retry_cap_seconds, headers, metadata, filter, enabled, disabled_reason, propagate_trace, created_at, updated_at, signature_scheme, auth, tls, legacy_signature, ' +
  '(SELECT s.public_key FROM endpoint_secrets s WHERE s.endpoint_id = endpoints.id AND (s.expires_at IS NULL OR s.expires_at > now()) ORDER BY s.created_at DESC LIMIT 1) AS public_key';
