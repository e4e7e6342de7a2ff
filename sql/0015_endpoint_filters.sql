-- Content filters (docs/filters.md): an endpoint receives only the events whose payload matches
-- its filter. Why it is decided in the enqueue statement, in PostgreSQL: docs/architecture.md
-- ("Filters").
--
-- `filter` is the document as the API validated it (shown on reads); `filter_path` is the same
-- filter compiled once, by the API, into a SQL/JSON path predicate (src/filters/jsonpath.ts) that
-- the fan-out evaluates with jsonb_path_match. Both are written together, or neither is: a filter
-- of `{}` matches everything and is stored with no path. Neither concerns the dispatchers, so the
-- config version trigger (sql/0004, 0007) does not watch them.
ALTER TABLE endpoints
  ADD COLUMN filter jsonb CHECK (filter IS NULL OR jsonb_typeof(filter) = 'object'),
  ADD COLUMN filter_path jsonpath CHECK (filter_path IS NULL OR filter IS NOT NULL);

-- The enqueue asks, once per tenant of a batch, whether the tenant has any filtered endpoint:
-- only then does it cast the batch's payloads to jsonb. Tiny (filtered endpoints only), and empty
-- for a deployment that uses no filters, so the question costs one probe of an empty index.
CREATE INDEX endpoints_filtered_tenant_idx ON endpoints (tenant_id)
  WHERE filter_path IS NOT NULL AND deleted_at IS NULL;
