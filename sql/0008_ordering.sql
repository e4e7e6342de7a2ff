-- Ordered delivery by ordering_key (docs/architecture.md, "Ordering keys").
--
-- One row per (endpoint, ordering key) ever used: the last sequence number handed out. The
-- enqueue increments it with INSERT .. ON CONFLICT DO UPDATE in the statement that creates the
-- deliveries, so numbers are assigned without a read-then-write race, and the row lock it takes
-- serialises the enqueues and head releases of one key. Kept by retention: the numbers must keep
-- increasing for as long as the endpoint exists.
CREATE TABLE ordering_keys (
  endpoint_id   text NOT NULL,
  ordering_key  text NOT NULL,
  last_sequence bigint NOT NULL,
  PRIMARY KEY (endpoint_id, ordering_key)
);

-- The delivery's number within its (endpoint, ordering key), sent as hookpost-sequence. NULL for
-- unkeyed deliveries. Never changed after the insert, so the completion update stays HOT.
ALTER TABLE deliveries ADD COLUMN sequence bigint;

-- A keyed queue row waits HELD (next_attempt_at 'infinity', never due) until it is its key's
-- head: only one row per (endpoint, key) is ever unheld, and only it can be due or leased.
ALTER TABLE delivery_queue ADD COLUMN ordering_key text, ADD COLUMN sequence bigint,
  ADD COLUMN held boolean NOT NULL DEFAULT false;
-- The next head to release: a key's held rows in sequence order.
CREATE INDEX delivery_queue_held_idx ON delivery_queue (endpoint_id, ordering_key, sequence) WHERE held;
-- "Does this key have a head?": at most one entry per key.
CREATE INDEX delivery_queue_key_head_idx ON delivery_queue (endpoint_id, ordering_key)
  WHERE ordering_key IS NOT NULL AND NOT held;
