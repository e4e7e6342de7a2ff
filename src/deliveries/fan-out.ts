/**
 * The fan-out, written once for every statement that creates deliveries (the enqueue, hookpost's
 * own operational events): which endpoints receive a message (subscription, then content filter),
 * and the deliveries and queue rows it gets.
 */
import type { Executor, Fragment } from '../db/connect.js';
import { queueNewDeliveries } from '../queue/enqueue-rows.js';

/**
 * The join condition for an endpoint aliased `e` that receives a message of tenant `tenantId`
 * and type `eventType`: live (not deleted, enabled), of that tenant, subscribed to the type. One
 * GIN lookup of the tenant's subscription keys (sql/0005_tenants.sql); the tenant comparison
 * repeats what the keys already guarantee.
 */
export function subscribedEndpoint(sql: Executor, tenantId: Fragment, eventType: Fragment): Fragment {
  return sql`hookpost_subscription_keys(e.tenant_id, e.event_types) && hookpost_event_match_keys(${tenantId}, ${eventType})
    AND e.deleted_at IS NULL AND e.enabled AND e.tenant_id = ${tenantId}`;
}

/**
 * Whether endpoint `e`'s content filter (or the compiled `path` given) lets through the message
 * whose payload is `doc` (jsonb): true without a filter; otherwise the filter's compiled SQL/JSON
 * path (filters/jsonpath.ts), where an unknown result (none arises from a compiled filter) counts
 * as no match. Why the filter is decided here, in the statement: docs/architecture.md ("Filters").
 * POST /v1/filters/test asks the same predicate with its own path.
 */
export function passesFilter(sql: Executor, doc: Fragment, path: Fragment = sql`e.filter_path`): Fragment {
  return sql`(${path} IS NULL OR coalesce(jsonb_path_match(${doc}, ${path}, silent => true), false))`;
}

/**
 * CTE \`filtering\` (one row: \`tenants\`, an array): which of \`tenants\` have a filtered endpoint,
 * asked once per statement from an index of filtered endpoints only (empty where no filter is
 * used, so the question costs one probe of an empty index).
 */
export function filteringTenants(sql: Executor, tenants: string[]): Fragment {
  return sql`
    filtering AS MATERIALIZED (
      SELECT ARRAY(
        SELECT DISTINCT f.tenant_id FROM endpoints f
        WHERE f.tenant_id = ANY(${tenants}::text[]) AND f.filter_path IS NOT NULL AND f.deleted_at IS NULL
      ) AS tenants
    ),`;
}

/**
 * The payload as jsonb for filtering, as an expression of a \`messages\` row (the enqueue's
 * RETURNING): cast only when the message's tenant is in \`filtering\`, else NULL, so a batch of
 * tenants without filters casts nothing. \`unsafe\` maps message ids to the text to filter a
 * payload as when jsonb cannot take the payload itself (filters/payload-text.ts).
 */
export function filterDocument(sql: Executor, unsafe: Map<string, string>): Fragment {
  const text =
    unsafe.size > 0
      ? sql`coalesce((${[...unsafe.values()]}::text[])[array_position(${[...unsafe.keys()]}::text[], id)],
                     convert_from(payload, 'UTF8'))`
      : sql`convert_from(payload, 'UTF8')`;
  return sql`CASE WHEN tenant_id = ANY((SELECT tenants FROM filtering)::text[]) THEN ${text}::jsonb END`;
}

/**
 * CTEs `<prefix>created` (the deliveries, returning id, message_id, endpoint_id, status) and the
 * queue's `<prefix>starts`, `<prefix>queued` for the rows of `rows`, a CTE of `id, message_id,
 * endpoint_id, ordering_key, sequence`.
 */
export function insertDeliveries(sql: Executor, prefix: string, rows: Fragment): Fragment {
  return sql`
    ${sql(`${prefix}created`)} AS (
      INSERT INTO deliveries (id, message_id, endpoint_id, sequence)
      SELECT id, message_id, endpoint_id, sequence FROM ${rows}
      RETURNING id, message_id, endpoint_id, status
    ),
    ${queueNewDeliveries(sql, prefix, rows)}`;
}
