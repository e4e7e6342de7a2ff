/**
 * The queries behind the dispatcher's endpoint cache (dispatch/endpoint-cache.ts): what an
 * endpoint sends with, still sealed, and the version that says whether a cached copy is current.
 */
import type { Sql } from '../db/connect.js';
import type { StoredCredentials } from './credentials.js';

/** Bumped by the endpoints_config_version trigger (sql/0004); NOTIFY names the endpoint id. */
export const ENDPOINT_CHANGED_CHANNEL = 'hookpost_endpoint_changed';

/** `auth`, `tls`, `legacy_signature` as stored (secret fields sealed), NULL when unset. */
export interface SendingConfigRow extends StoredCredentials {
  id: string;
  tenant_id: string;
  url: string;
  /** Header values as stored: sealed (or `plain:`). */
  headers: Record<string, string>;
  enabled: boolean;
  /** The endpoint has a max_in_flight (its leased queue rows are counted against it). */
  in_flight_limited: boolean;
  /** Send `traceparent` with its attempts (sql/0018). */
  propagate_trace: boolean;
  /** Per-endpoint retry overrides (sql/0007); null: the global default. */
  max_attempts: number | null;
  retry_base_seconds: number | null;
  retry_cap_seconds: number | null;
  /** bigint, as postgres.js returns it: a string. */
  config_version: string;
  /** Active signing secrets as stored (sealed), newest first, with their expiry (ms; Infinity: none). */
  secrets: string[];
  expires: number[];
}

/**
 * Loads the endpoints' sending configuration in one statement. Expired secrets are left out;
 * secrets that expire later carry their expiry so the cache drops them on time without a query.
 */
export async function loadSendingConfig(sql: Sql, ids: string[]): Promise<SendingConfigRow[]> {
  if (ids.length === 0) return [];
  return sql<SendingConfigRow[]>`
    SELECT e.id, e.tenant_id, e.url, e.propagate_trace, e.headers, e.auth, e.tls, e.legacy_signature, e.enabled, e.max_in_flight IS NOT NULL AS in_flight_limited, e.max_attempts, e.retry_base_seconds, e.retry_cap_seconds, e.config_version,
      coalesce(array_agg(s.secret ORDER BY s.created_at DESC) FILTER (WHERE s.secret IS NOT NULL), '{}') AS secrets,
      coalesce(array_agg(coalesce(extract(epoch FROM s.expires_at) * 1000, 'Infinity')::float8 ORDER BY s.created_at DESC)
        FILTER (WHERE s.secret IS NOT NULL), '{}') AS expires
    FROM endpoints e
    LEFT JOIN endpoint_secrets s ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
    WHERE e.id = ANY(${ids}::text[])
    GROUP BY e.id`;
}

/**
 * The current version of each endpoint: one primary-key lookup per id, run once per claim batch
 * so a change committed before the claim is seen by the attempts of that batch.
 */
export async function endpointVersions(sql: Sql, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<{ id: string; config_version: string }[]>`
    SELECT id, config_version FROM endpoints WHERE id = ANY(${ids}::text[])`;
  return new Map(rows.map((r) => [r.id, r.config_version]));
}
