/**
 * Operational events: hookpost's own events (`endpoint.disabled`, `endpoint.circuit_opened`,
 * `endpoint.circuit_closed`, `endpoint.certificate_expiring`, `delivery.dead_lettered` and its per-minute summary,
 * `replay.finished`), enqueued as ordinary messages of the reserved tenant `hookpost` and fanned
 * out to its endpoints by event type like any enqueue. The rule is written once, here, as SQL
 * fragments (CTE lists) that the statement causing the event composes, so an event commits or
 * rolls back with its cause: no event for a change that rolled back, none lost for one that
 * committed. Why and what it costs: docs/architecture.md ("Operational events").
 */
import type { Executor, Fragment } from '../db/connect.js';
import { insertDeliveries, passesFilter, subscribedEndpoint } from '../deliveries/fan-out.js';
import { wakeDispatchersAtCommit } from '../queue/wakeup.js';
import { OPERATIONS_TENANT } from '../tenants/scope.js';

/** HOOKPOST_OPS_EVENTS_PER_MINUTE's default: `delivery.dead_lettered` events per endpoint a minute. */
export const DEFAULT_OPS_EVENTS_PER_MINUTE = 600;

/**
 * CTEs (to splice into a `WITH` list, after the caller's own; `name` prefixes them so one
 * statement can hold several) that enqueue one operational event per row of `events`, a subquery
 * of `(type text, tenant_id text, endpoint_id text, data jsonb)`; a NULL tenant_id is the source
 * endpoint's. The payload is `{type, timestamp, data: {tenant_id, endpoint_id, …data}}`. Rows
 * about the `hookpost` tenant itself are dropped (its own deliveries must not feed themselves),
 * and when the `hookpost` tenant has no enabled endpoint nothing is written at all: one probe of
 * endpoints_tenant_idx, evaluated once per statement and only when `events` has rows.
 */
export function opsEventCtes(sql: Executor, name: string, events: Fragment): Fragment {
  const n = (suffix: string) => sql(`${name}_${suffix}`);
  return sql`
    ${n('src')} AS (
      SELECT id, type, doc, convert_to(doc::text, 'UTF8') AS payload FROM (
      SELECT hookpost_id('msg_') AS id, x.type,
        jsonb_build_object(
          'type', x.type,
          'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'data', jsonb_build_object('tenant_id', x.tenant_id, 'endpoint_id', x.endpoint_id) || coalesce(x.data, '{}')
        ) AS doc
      FROM (
        SELECT ev.type, coalesce(ev.tenant_id, se.tenant_id) AS tenant_id, ev.endpoint_id, ev.data
        FROM (${events}) ev LEFT JOIN endpoints se ON se.id = ev.endpoint_id
      ) x
      WHERE x.tenant_id IS DISTINCT FROM ${OPERATIONS_TENANT}
        AND EXISTS (SELECT 1 FROM endpoints o WHERE o.tenant_id = ${OPERATIONS_TENANT} AND o.deleted_at IS NULL AND o.enabled)
      ) built
    ),
    ${n('messages')} AS (
      INSERT INTO messages (id, tenant_id, producer, event_type, request_hash, payload)
      SELECT id, ${OPERATIONS_TENANT}, ${OPERATIONS_TENANT}, type, sha256(payload), payload FROM ${n('src')}
    ),
    ${n('targets')} AS (
      -- The enqueue's fan-out (deliveries/fan-out.ts), content filters included (the payload is
      -- jsonb already here). The uncorrelated subquery runs once, and only when there is a target:
      -- dispatchers wake at commit (NOTIFY is transactional) instead of at their next poll.
      SELECT hookpost_id('dlv_') AS id, s.id AS message_id, e.id AS endpoint_id,
        NULL::text AS ordering_key, NULL::bigint AS sequence, (SELECT ${wakeDispatchersAtCommit(sql)}) AS woken
      FROM ${n('src')} s JOIN endpoints e
        ON ${subscribedEndpoint(sql, sql`${OPERATIONS_TENANT}::text`, sql`s.type`)} AND ${passesFilter(sql, sql`s.doc`)}
    ),
    ${insertDeliveries(sql, `${name}_`, sql`${n('targets')}`)}`;
}

/**
 * The dead letters among `settled` (a CTE of updated deliveries with id, status, endpoint_id,
 * message_id, attempt_count, last_status_code, last_error_class), shaped for
 * deadLetterEventCtes (the completion and the reaper dead-letter in the same statement).
 */
export function deadLetterRows(sql: Executor, settled: Fragment): Fragment {
  return sql`
    SELECT x.id AS delivery_id, x.endpoint_id,
      jsonb_build_object('message_id', x.message_id, 'event_type', m.event_type, 'attempts', x.attempt_count,
                         'last_status_code', x.last_status_code, 'last_error_class', x.last_error_class) AS data
    FROM ${settled} x JOIN messages m ON m.id = x.message_id
    WHERE x.status = 'dead_letter'`;
}

/**
 * CTEs that enqueue `delivery.dead_lettered` for the rows of `dead`, a subquery of
 * `(delivery_id text, endpoint_id text, data jsonb)`, at most `perMinute` per source endpoint a
 * minute across every process: the statement upserts the endpoint-minute counter
 * (ops_event_counters) by the batch's count and keeps the rows whose place in the minute is
 * within the cap. The rest are folded into the minute's summary (summarizeDeadLetterMinutes).
 * The counter row is only written while the `hookpost` tenant has endpoints.
 */
export function deadLetterEventCtes(
  sql: Executor,
  name: string,
  dead: Fragment,
  perMinute: number,
): Fragment {
  const n = (suffix: string) => sql(`${name}_${suffix}`);
  return sql`
    ${n('dead')} AS (
      SELECT dd.*, row_number() OVER (PARTITION BY dd.endpoint_id ORDER BY dd.delivery_id) AS place,
        count(*) OVER (PARTITION BY dd.endpoint_id) AS batch
      FROM (${dead}) dd JOIN endpoints de ON de.id = dd.endpoint_id
      WHERE de.tenant_id <> ${OPERATIONS_TENANT}
        AND EXISTS (SELECT 1 FROM endpoints o WHERE o.tenant_id = ${OPERATIONS_TENANT} AND o.deleted_at IS NULL AND o.enabled)
    ),
    ${n('counted')} AS (
      INSERT INTO ops_event_counters AS c (endpoint_id, minute, dead_lettered)
      SELECT endpoint_id, date_trunc('minute', now()), count(*) FROM ${n('dead')} GROUP BY endpoint_id
      -- one lock order for every statement: two batches over the same endpoints cannot deadlock
      ORDER BY endpoint_id
      ON CONFLICT (endpoint_id, minute) DO UPDATE SET dead_lettered = c.dead_lettered + excluded.dead_lettered
      RETURNING c.endpoint_id, c.dead_lettered
    ),
    ${opsEventCtes(
      sql,
      name,
      sql`
        SELECT 'delivery.dead_lettered'::text AS type, NULL::text AS tenant_id, d.endpoint_id,
          jsonb_build_object('delivery_id', d.delivery_id) || d.data AS data
        FROM ${n('dead')} d JOIN ${n('counted')} k ON k.endpoint_id = d.endpoint_id
        -- this batch's rows took places (total - batch + 1) .. total of the minute
        WHERE k.dead_lettered - d.batch + d.place <= ${perMinute}`,
    )}`;
}

/**
 * Once a minute is over, emits one `delivery.dead_lettered.summary` per endpoint-minute whose
 * dead letters went past the cap (`dead_lettered`, and `not_sent` = how many had no event of
 * their own), in the statement that marks the minute summarised, so exactly one is sent however
 * many dispatchers run this. Also forgets counter rows older than a day. Returns how many
 * summaries it enqueued.
 */
export async function summarizeDeadLetterMinutes(sql: Executor, perMinute: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    WITH due AS (
      UPDATE ops_event_counters SET summarized = true
      WHERE NOT summarized AND minute < date_trunc('minute', now()) AND dead_lettered > ${perMinute}
      RETURNING endpoint_id, minute, dead_lettered
    ),
    ${opsEventCtes(
      sql,
      'summary',
      sql`
        SELECT 'delivery.dead_lettered.summary'::text AS type, NULL::text AS tenant_id, endpoint_id,
          jsonb_build_object('minute', to_char(minute AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             'dead_lettered', dead_lettered, 'not_sent', dead_lettered - ${perMinute}) AS data
        FROM due`,
    )},
    forgotten AS (
      DELETE FROM ops_event_counters
      WHERE minute < now() - interval '1 day' AND (summarized OR dead_lettered <= ${perMinute})
    )
    SELECT count(*)::int AS n FROM due`;
  return row?.n ?? 0;
}
