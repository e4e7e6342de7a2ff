/**
 * Which circuits a bulk replay runs into. A replayed delivery whose endpoint's circuit is open or
 * half-open is requeued parked (queue/requeue.ts): it waits for the next probe, or for someone to
 * close the circuit by hand. The replay's answer names those circuits, so the caller is told why
 * nothing arrives yet and what to do, instead of "8 of 8 queued" and silence.
 */
import type { Executor } from '../db/connect.js';
import { matches, type ReplayFilter } from './bulk-replay.js';

/** At most this many circuits are named in one answer. */
const MAX_CIRCUITS = 100;

export interface CircuitAhead {
  endpoint_id: string;
  state: 'open' | 'half_open';
  /** When the circuit lets (or let) its next probe through: opened_at + cooldown. */
  next_probe_at: Date | null;
}

/**
 * The enabled endpoints, among those the filter's dead letters (died by `asOf`) belong to, whose
 * circuit is not closed. Run it before the replay requeues anything: afterwards they are no longer
 * dead letters. Open circuits are few, so each is one EXISTS probe into its dead letters. A
 * disabled endpoint is not named: its dead letters are skipped, not queued (`skipped`).
 */
export async function circuitsAhead(
  sql: Executor,
  filter: ReplayFilter,
  asOf: string,
): Promise<CircuitAhead[]> {
  return sql<CircuitAhead[]>`
    SELECT e.id AS endpoint_id, h.state,
      h.opened_at + make_interval(secs => h.cooldown_seconds) AS next_probe_at
    FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id
    WHERE h.state <> 'closed' AND e.enabled AND e.deleted_at IS NULL
      ${filter.endpointId === undefined ? sql`` : sql`AND e.id = ${filter.endpointId}`}
      AND EXISTS (SELECT 1 FROM deliveries d WHERE d.endpoint_id = e.id AND ${matches(sql, filter, asOf)})
    ORDER BY e.id
    LIMIT ${MAX_CIRCUITS}`;
}
