-- "What happened in the last hour" (GET /v1/pipeline) reads delivery_attempts by started_at.
-- BRIN, not B-tree: the table is append-only and started_at follows the insert order, so a
-- BRIN index (a min/max per 128 pages) finds the last hour's pages for a few kilobytes of
-- index, and an insert into a page range that is not summarised yet costs nothing at all,
-- where a B-tree would add an index write to every attempt on the hot path.
CREATE INDEX delivery_attempts_started_brin ON delivery_attempts USING brin (started_at);
