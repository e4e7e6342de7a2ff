-- Retention, version 6: the attempt log partitioned by time, payload expiry, the retention pass's
-- bookkeeping. Why it looks the way it does: docs/architecture.md ("Retention").

-- 1. delivery_attempts becomes a table partitioned by range on started_at, so whole time slices
-- are dropped instead of deleted row by row. Every step here is catalog-only: the existing
-- table is renamed and attached as the DEFAULT partition, which needs no scan when it is the
-- only partition (its partition constraint is empty), and its indexes are adopted by the new
-- partitioned indexes instead of being rebuilt. On a 10 M-row table this transaction holds its
-- locks for milliseconds (measured in the README, "Retention"). The dispatchers' retention pass
-- later gives the old table a time bound without blocking writes (CHECK … NOT VALID, then
-- VALIDATE, then re-attach as a range partition: src/retention/partitions.ts) and creates the
-- daily partitions from there on; the old table is dropped whole once all of it is past
-- HOOKPOST_RETENTION_DAYS.
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_legacy;
ALTER INDEX delivery_attempts_delivery_idx RENAME TO delivery_attempts_legacy_delivery_idx;
ALTER INDEX delivery_attempts_started_brin RENAME TO delivery_attempts_legacy_started_brin;

-- The same columns as the old table, whatever earlier migrations added to it (LIKE copies them
-- with their NOT NULLs, defaults and CHECKs, which ATTACH requires to match).
CREATE TABLE delivery_attempts (
  LIKE delivery_attempts_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION
) PARTITION BY RANGE (started_at);

ALTER TABLE delivery_attempts ATTACH PARTITION delivery_attempts_legacy DEFAULT;
-- Same definitions as before (0001, 0003): each finds the old table's equivalent index and
-- attaches it rather than building a new one.
CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, attempt);
CREATE INDEX delivery_attempts_started_brin ON delivery_attempts USING brin (started_at);

-- 2. Payload expiry (HOOKPOST_PAYLOAD_RETENTION_DAYS, POST /v1/messages/{id}/expunge): the bytes
-- are replaced by an empty value and the moment recorded; the row and its metadata stay.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS payload_expired_at timestamptz;
-- A nullable column without a default is a catalog change. The index the expiry pass walks
-- (messages_payload_live_idx) is not built here: on a large messages table CREATE INDEX would
-- block enqueue for as long as the build takes (9.6 s for 10 M messages), so the pass builds it
-- CONCURRENTLY the first time payload expiry is enabled (src/retention/payload-index.ts).

-- Retention deletes from messages and deliveries as fast as enqueue inserts into them. Vacuum them
-- at 5 % dead rows instead of the default 20 %, so the space freed by each day's removal is reused
-- by the next day's inserts before the tables grow by a fifth (the soak in the README shows it).
ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE deliveries SET (autovacuum_vacuum_scale_factor = 0.05);

-- 3. One row: when the retention pass last ran, succeeded and what it did. Every dispatcher
-- tries the pass on a timer; this row lets the others see that one ran recently and skip, and
-- lets each of them report the installation's last success in its metrics.
CREATE TABLE retention_state (
  id               integer PRIMARY KEY CHECK (id = 1),
  last_started_at  timestamptz,
  last_finished_at timestamptz,
  last_success_at  timestamptz,
  last_duration_ms integer,
  last_error       text,
  last_result      jsonb
);
INSERT INTO retention_state (id) VALUES (1);

-- 4. Erasure requests (POST /v1/messages/{id}/expunge): who asked, when, what it did. Kept apart
-- from replay_audit, whose rows are replays with a progress state.
CREATE TABLE message_expunges (
  id                   text PRIMARY KEY,
  message_id           text NOT NULL,
  actor                text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  cancelled_deliveries integer NOT NULL,
  erased_snippets      integer NOT NULL
);
