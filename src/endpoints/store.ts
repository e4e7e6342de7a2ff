/** Endpoint rows: create, read, update, soft-delete and secret rotation. */
import type { Sql } from '../db/connect.js';
import {
  cancelWaiting,
  disableEndpoints,
  enableEndpoints,
  markCancelled,
} from '../deliveries/queue-state.js';
import { newId } from '../ids.js';
import { generateSecret, type SecretBox } from './secrets.js';

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  rateLimitPerSecond: number | null;
  maxInFlight: number | null;
  headers: Record<string, string>;
  metadata: Record<string, unknown>;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EndpointInput {
  url: string;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  rateLimitPerSecond?: number | null | undefined;
  maxInFlight?: number | null | undefined;
  headers?: Record<string, string> | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export type EndpointPatch = Partial<EndpointInput> & { enabled?: boolean | undefined };

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  event_types: string[];
  rate_limit_per_second: number | null;
  max_in_flight: number | null;
  headers: Record<string, string>;
  metadata: Record<string, unknown>;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

function toEndpoint(row: EndpointRow): Endpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    rateLimitPerSecond: row.rate_limit_per_second,
    maxInFlight: row.max_in_flight,
    headers: row.headers,
    metadata: row.metadata,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const COLUMNS =
  'id, url, description, event_types, rate_limit_per_second, max_in_flight, headers, metadata, enabled, disabled_reason, created_at, updated_at';

export class EndpointStore {
  constructor(
    private readonly sql: Sql,
    private readonly secrets: SecretBox,
  ) {}

  /** Creates the endpoint and its first secret in one transaction; returns both. */
  async create(input: EndpointInput): Promise<{ endpoint: Endpoint; secret: string }> {
    const id = newId('ep_');
    const secret = generateSecret();
    const sealed = this.secrets.seal(secret);
    const row = await this.sql.begin(async (tx) => {
      const [created] = await tx<EndpointRow[]>`
        INSERT INTO endpoints (id, url, description, event_types, rate_limit_per_second, max_in_flight, headers, metadata)
        VALUES (${id}, ${input.url}, ${input.description ?? ''}, ${input.eventTypes ?? []},
                ${input.rateLimitPerSecond ?? null}, ${input.maxInFlight ?? null},
                ${tx.json(input.headers ?? {})}, ${tx.json((input.metadata ?? {}) as never)})
        RETURNING ${tx.unsafe(COLUMNS)}`;
      await tx`INSERT INTO endpoint_secrets (endpoint_id, secret) VALUES (${id}, ${sealed})`;
      await tx`INSERT INTO endpoint_health (endpoint_id) VALUES (${id})`;
      return created!;
    });
    return { endpoint: toEndpoint(row), secret };
  }

  async get(id: string): Promise<Endpoint | undefined> {
    const [row] = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints WHERE id = ${id} AND deleted_at IS NULL`;
    return row && toEndpoint(row);
  }

  async getMany(ids: string[]): Promise<Endpoint[]> {
    if (ids.length === 0) return [];
    const rows = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints WHERE id = ANY(${ids}::text[]) AND deleted_at IS NULL`;
    return rows.map(toEndpoint);
  }

  /** Keyset page in creation order. */
  async list(limit: number, after?: string): Promise<Endpoint[]> {
    const rows = await this.sql<EndpointRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM endpoints
      WHERE deleted_at IS NULL AND id > ${after ?? ''}
      ORDER BY id LIMIT ${limit}`;
    return rows.map(toEndpoint);
  }

  /** Applies the given fields only. Re-enabling clears the disabled reason and resets the breaker. */
  async update(id: string, patch: EndpointPatch): Promise<Endpoint | undefined> {
    return this.sql.begin(async (tx) => {
      const [current] = await tx<EndpointRow[]>`
        SELECT ${tx.unsafe(COLUMNS)} FROM endpoints WHERE id = ${id} AND deleted_at IS NULL FOR UPDATE`;
      if (!current) return undefined;
      const set = {
        url: patch.url ?? current.url,
        description: patch.description ?? current.description,
        event_types: patch.eventTypes ?? current.event_types,
        rate_limit_per_second:
          patch.rateLimitPerSecond === undefined ? current.rate_limit_per_second : patch.rateLimitPerSecond,
        max_in_flight: patch.maxInFlight === undefined ? current.max_in_flight : patch.maxInFlight,
        headers: patch.headers ?? current.headers,
        metadata: patch.metadata ?? current.metadata,
        enabled: patch.enabled ?? current.enabled,
      };
      const [row] = await tx<EndpointRow[]>`
        UPDATE endpoints SET
          url = ${set.url}, description = ${set.description}, event_types = ${set.event_types},
          rate_limit_per_second = ${set.rate_limit_per_second}, max_in_flight = ${set.max_in_flight},
          headers = ${tx.json(set.headers)}, metadata = ${tx.json(set.metadata as never)},
          updated_at = now()
        WHERE id = ${id}
        RETURNING ${tx.unsafe(COLUMNS)}`;
      // Enabling and disabling are queue-state transitions (deliveries/queue-state.ts): they also
      // park or release the endpoint's queued deliveries and reset its breaker.
      if (set.enabled && !current.enabled) await enableEndpoints(tx, [id]);
      else if (!set.enabled && current.enabled)
        await disableEndpoints(tx, tx`SELECT ${id}::text AS id, 'disabled by API'::text AS reason`);
      else return toEndpoint(row!);
      const [changed] = await tx<EndpointRow[]>`SELECT ${tx.unsafe(COLUMNS)} FROM endpoints WHERE id = ${id}`;
      return toEndpoint(changed!);
    });
  }

  /**
   * Soft delete: the endpoint disappears from the API and fan-out, its queued deliveries are
   * cancelled, and its delivery history stays readable.
   */
  async delete(id: string): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const rows = await tx`
        UPDATE endpoints SET deleted_at = now(), enabled = false, disabled_reason = 'deleted', updated_at = now()
        WHERE id = ${id} AND deleted_at IS NULL RETURNING id`;
      if (rows.length === 0) return false;
      // Waiting deliveries are cancelled now; those in flight are cancelled when they come back
      // (deliveries/queue-state.ts, returnFate), unless they were delivered or dead-lettered.
      await tx`
        WITH dropped AS (${cancelWaiting(tx, tx`SELECT ${id}::text`)})
        ${markCancelled(tx, tx`SELECT delivery_id FROM dropped`)}`;
      return true;
    });
  }

  /** Adds a new secret; the current ones keep signing for `graceSeconds`, then expire. */
  async rotateSecret(id: string, graceSeconds: number): Promise<string | undefined> {
    const secret = generateSecret();
    const sealed = this.secrets.seal(secret);
    const ok = await this.sql.begin(async (tx) => {
      const rows = await tx`SELECT id FROM endpoints WHERE id = ${id} AND deleted_at IS NULL FOR UPDATE`;
      if (rows.length === 0) return false;
      await tx`
        UPDATE endpoint_secrets SET expires_at = now() + make_interval(secs => ${graceSeconds})
        WHERE endpoint_id = ${id} AND (expires_at IS NULL OR expires_at > now() + make_interval(secs => ${graceSeconds}))`;
      await tx`INSERT INTO endpoint_secrets (endpoint_id, secret) VALUES (${id}, ${sealed})`;
      await tx`UPDATE endpoints SET updated_at = now() WHERE id = ${id}`;
      return true;
    });
    return ok ? secret : undefined;
  }
}
