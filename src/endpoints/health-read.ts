/** Reading an endpoint's breaker state for GET /v1/endpoints/{id}/health (the breaker writes it). */
import type { Sql } from '../db/connect.js';

export interface EndpointHealthRow {
  state: string;
  consecutive_failures: number;
  opened_at: Date | null;
  cooldown_seconds: number | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  failing_since: Date | null;
}

/** The endpoint's shared breaker row; undefined for an endpoint that has none yet. */
export async function readEndpointHealth(
  sql: Sql,
  endpointId: string,
): Promise<EndpointHealthRow | undefined> {
  const [row] = await sql<EndpointHealthRow[]>`
    SELECT state, consecutive_failures, opened_at, cooldown_seconds, last_success_at, last_failure_at, failing_since
    FROM endpoint_health WHERE endpoint_id = ${endpointId}`;
  return row;
}
