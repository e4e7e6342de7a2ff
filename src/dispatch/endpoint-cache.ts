/**
 * What the dispatcher needs to send to an endpoint (URL, custom headers, decrypted signing keys),
 * cached per process and kept current two ways:
 * - once per claim batch, each claimed endpoint's `config_version` (returned by the claim itself)
 *   is compared with the cached one and only what changed is reloaded, so a rotation, URL or
 *   header change or a disable committed before the claim is seen by the very next attempt;
 * - a NOTIFY from the endpoints trigger (sql/0004) marks an entry stale while its deliveries
 *   wait in the local buffer, and the attempt reloads it before sending.
 *
 * Each endpoint is decrypted on its own: one whose secret or header no configured key opens is
 * cached as `unavailable` (its deliveries fail with `secret_unavailable`, no request is sent),
 * and every other endpoint in the batch is untouched.
 */
import type { Sql } from '../db/connect.js';
import type { RetryOverrides } from '../deliveries/retry-policy.js';
import { openCredentials } from '../endpoints/credentials.js';
import { openHeaders } from '../endpoints/headers.js';
import { type SecretBox, SecretUnavailableError } from '../endpoints/secrets.js';
import {
  ENDPOINT_CHANGED_CHANNEL,
  endpointVersions,
  loadSendingConfig,
  type SendingConfigRow,
} from '../endpoints/sending-config.js';
import type { Logger } from '../log.js';
import { type SendingCredentials, sendingCredentials } from './partner-credentials.js';
import { type SigningKey, signingKey } from './signing.js';

/** The error class of attempts to an endpoint whose secrets cannot be decrypted. */
export const SECRET_UNAVAILABLE = 'secret_unavailable';

export interface DispatchEndpoint {
  id: string;
  /** For the attempt span's hookpost.tenant_id. */
  tenantId: string;
  url: string;
  /** Send the attempt's `traceparent` (tracing on); off by default. */
  propagateTrace: boolean;
  headers: Record<string, string>;
  /** Signing keys, newest first: one `v1,` or `v1a,` signature each. */
  keys: SigningKey[];
  enabled: boolean;
  /**
   * The endpoint has a max_in_flight: a claim counts its leased queue rows, so a finished
   * attempt frees its slot only once its result is written (written at once: completions.ts).
   */
  inFlightLimited: boolean;
  /** The endpoint's own retry settings, over the global policy (deliveries/retry-policy.ts policyFor). */
  retry: RetryOverrides;
  /** `auth`, `tls`, `legacy_signature` ready to use; undefined for an endpoint with none. */
  credentials: SendingCredentials | undefined;
  /** Set when a secret or header value cannot be decrypted: a payload-free reason. */
  unavailable: string | undefined;
}

interface Entry {
  version: string;
  endpoint: DispatchEndpoint;
  /** Per key, when it stops signing (ms since epoch; Infinity for never: a NULL would read as NaN). */
  expires: number[];
  /** A NOTIFY said it changed: reload before the next use. */
  stale: boolean;
}

export class EndpointCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<void>>();
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly secrets: SecretBox,
    private readonly log?: Logger,
  ) {}

  /** Listens for endpoint changes. Missed notifications (a reconnect) are caught by the version check. */
  async start(): Promise<void> {
    const listener = await this.sql.listen(ENDPOINT_CHANGED_CHANNEL, (id) => {
      const entry = this.entries.get(id);
      if (entry) entry.stale = true;
    });
    this.unlisten = listener.unlisten;
  }

  async stop(): Promise<void> {
    await this.unlisten?.();
  }

  /**
   * For a claim batch: compares the versions of the cached endpoints, as the claim read them
   * (`claimedVersions`) or else read by one query, and loads those that are new, changed or stale
   * in one more. Unknown (deleted for good) ids map to undefined.
   */
  async getMany(
    ids: Iterable<string>,
    claimedVersions?: Map<string, string>,
  ): Promise<Map<string, DispatchEndpoint | undefined>> {
    const wanted = [...new Set(ids)];
    const versions =
      claimedVersions ??
      (await endpointVersions(
        this.sql,
        wanted.filter((id) => this.entries.has(id) && !this.entries.get(id)!.stale),
      ));
    const reload = wanted.filter((id) => {
      const entry = this.entries.get(id);
      return !entry || entry.stale || versions.get(id) !== entry.version;
    });
    await this.load(reload);
    return new Map(wanted.map((id) => [id, this.current(id)]));
  }

  /**
   * The endpoint as it should be sent to now: reloaded first if a NOTIFY marked it stale since
   * its deliveries were claimed. Expired keys are dropped here, without a query.
   */
  async fresh(id: string): Promise<DispatchEndpoint | undefined> {
    if (this.entries.get(id)?.stale) await this.load([id]);
    return this.current(id);
  }

  /**
   * fresh() without a promise when nothing is stale (the common case, once per attempt); a
   * promise only when the entry must be reloaded first.
   */
  freshOrReload(id: string): DispatchEndpoint | undefined | Promise<DispatchEndpoint | undefined> {
    return this.entries.get(id)?.stale ? this.fresh(id) : this.current(id);
  }

  private current(id: string): DispatchEndpoint | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    const now = Date.now();
    if (entry.expires.every((at) => at > now)) return entry.endpoint;
    const keep = entry.expires.map((at) => at > now);
    entry.endpoint = { ...entry.endpoint, keys: entry.endpoint.keys.filter((_, i) => keep[i]) };
    entry.expires = entry.expires.filter((_, i) => keep[i]);
    return entry.endpoint;
  }

  private async load(ids: string[]): Promise<void> {
    // One load per id at a time: concurrent attempts of a stale endpoint wait for the same query.
    const pending = ids.map((id) => this.loading.get(id)).filter((p) => p !== undefined);
    const todo = ids.filter((id) => !this.loading.has(id));
    if (todo.length > 0) {
      const run = this.query(todo);
      for (const id of todo) this.loading.set(id, run);
      pending.push(
        run.finally(() => {
          for (const id of todo) this.loading.delete(id);
        }),
      );
    }
    await Promise.all(pending);
  }

  private async query(ids: string[]): Promise<void> {
    // Marked fresh before the query: a NOTIFY that lands during it marks the entry stale again.
    for (const id of ids) {
      const entry = this.entries.get(id);
      if (entry) entry.stale = false;
    }
    const rows = await loadSendingConfig(this.sql, ids);
    const found = new Set(rows.map((r) => r.id));
    for (const id of ids) if (!found.has(id)) this.entries.delete(id);
    for (const row of rows) {
      const stale = this.entries.get(row.id)?.stale ?? false;
      this.entries.set(row.id, { ...this.decrypt(row), version: row.config_version, stale });
    }
  }

  private decrypt(row: SendingConfigRow): Pick<Entry, 'endpoint' | 'expires'> {
    const retry = {
      maxAttempts: row.max_attempts,
      retryBaseSeconds: row.retry_base_seconds,
      retryCapSeconds: row.retry_cap_seconds,
    };
    const base = {
      id: row.id,
      tenantId: row.tenant_id,
      url: row.url,
      propagateTrace: row.propagate_trace,
      enabled: row.enabled,
      inFlightLimited: row.in_flight_limited,
      retry,
    };
    try {
      const keys = row.secrets.map((s) => signingKey(this.secrets.open(s)));
      const headers = openHeaders(this.secrets, row.headers);
      const credentials = sendingCredentials(openCredentials(this.secrets, row));
      return {
        endpoint: { ...base, headers, keys, credentials, unavailable: undefined },
        expires: row.expires,
      };
    } catch (error) {
      const reason =
        error instanceof SecretUnavailableError
          ? `signing secret, header value or credential cannot be decrypted: ${error.message}`
          : 'signing secret cannot be read';
      // The key id and endpoint only: never the stored value or anything decrypted from it.
      this.log?.error(
        { endpointId: row.id, keyId: error instanceof SecretUnavailableError ? error.keyId : null },
        'endpoint secret cannot be decrypted: its deliveries fail with secret_unavailable',
      );
      return {
        endpoint: { ...base, headers: {}, keys: [], credentials: undefined, unavailable: reason },
        expires: [],
      };
    }
  }
}
