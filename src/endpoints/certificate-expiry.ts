/**
 * `endpoint.certificate_expiring`: an operational event for each endpoint whose TLS client
 * certificate ends within EXPIRY_WARNING_DAYS (or has ended), at most once a day per endpoint
 * across every process — the statement that claims the day (`certificate_warned_at`) is the one
 * that enqueues the event, so two dispatchers running it at once send one.
 */
import type { Sql } from '../db/connect.js';
import { opsEventCtes } from '../ops-events/events.js';
import { EXPIRY_WARNING_DAYS } from './tls-material.js';

/** Enqueues the day's certificate warnings; returns how many endpoints were announced. */
export async function announceExpiringCertificates(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    WITH due AS (
      UPDATE endpoints SET certificate_warned_at = now()
      WHERE client_certificate_expires_at < now() + make_interval(days => ${EXPIRY_WARNING_DAYS})
        AND deleted_at IS NULL
        AND (certificate_warned_at IS NULL OR certificate_warned_at < now() - interval '1 day')
      RETURNING id, tenant_id, client_certificate_expires_at
    ),
    ${opsEventCtes(
      sql,
      'certificate',
      sql`
        SELECT 'endpoint.certificate_expiring'::text AS type, tenant_id, id AS endpoint_id,
          jsonb_build_object(
            'expires_at', to_char(client_certificate_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
            'days_left', greatest(0, floor(extract(epoch FROM client_certificate_expires_at - now()) / 86400))::int
          ) AS data
        FROM due`,
    )}
    SELECT count(*)::int AS n FROM due`;
  return row?.n ?? 0;
}
