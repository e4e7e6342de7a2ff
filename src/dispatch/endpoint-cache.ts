/**
 * What the dispatcher needs to send to an endpoint (URL, custom headers, decrypted signing keys),
 * cached for a second so a claim batch of 500 costs at most one endpoint query, while a secret
 * rotation or a URL change still takes effect within a second.
 */
import type { Sql } from '../db/connect.js';
import { type SecretBox, secretKeyBytes } from '../endpoints/secrets.js';

export interface DispatchEndpoint {
  id: string;
  url: string;
  headers: Record<string, string>;
  /** Signing keys, newest first: one `v1,` signature each. */
  keys: Buffer[];
  enabled: boolean;
}

interface Entry {
  endpoint: DispatchEndpoint | undefined;
  loadedAt: number;
}

export class EndpointCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly sql: Sql,
    private readonly secrets: SecretBox,
    private readonly maxAgeMs = 1000,
  ) {}

  /** Loads every id that is missing or stale in one query; returns them all. */
  async getMany(ids: Iterable<string>): Promise<Map<string, DispatchEndpoint | undefined>> {
    const now = Date.now();
    const wanted = [...new Set(ids)];
    const stale = wanted.filter((id) => {
      const entry = this.entries.get(id);
      return !entry || now - entry.loadedAt > this.maxAgeMs;
    });
    if (stale.length > 0) {
      const rows = await this.sql<
        { id: string; url: string; headers: Record<string, string>; enabled: boolean; secrets: string[] }[]
      >`
        SELECT e.id, e.url, e.headers, e.enabled,
          coalesce(array_agg(s.secret ORDER BY s.created_at DESC) FILTER (WHERE s.secret IS NOT NULL), '{}') AS secrets
        FROM endpoints e
        LEFT JOIN endpoint_secrets s ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
        WHERE e.id = ANY(${stale}::text[])
        GROUP BY e.id`;
      for (const id of stale) this.entries.set(id, { endpoint: undefined, loadedAt: now });
      for (const row of rows) {
        this.entries.set(row.id, {
          loadedAt: now,
          endpoint: {
            id: row.id,
            url: row.url,
            headers: row.headers,
            enabled: row.enabled,
            keys: row.secrets.map((s) => secretKeyBytes(this.secrets.open(s))),
          },
        });
      }
    }
    return new Map(wanted.map((id) => [id, this.entries.get(id)?.endpoint]));
  }
}
