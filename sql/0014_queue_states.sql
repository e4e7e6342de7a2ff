-- A queue row's state in one column (docs/architecture.md, "Queue states"). Before, it was read
-- from three: a lease (leased), `next_attempt_at = 'infinity'` (parked, or held when `held` was
-- true), else scheduled; every reader re-derived it and every writer kept the sentinel and the
-- boolean in step. Only src/queue/ writes this table, so the state can be a column of its own:
--
--   scheduled  waiting for next_attempt_at; claimable once it has come (endpoint enabled, circuit
--              closed, or the row is its half-open circuit's probe)
--   leased     claimed by a dispatcher: in flight, lease_token and lease_expires_at set
--   cancelling leased, but its delivery was cancelled meanwhile (its message expunged): it leaves
--              the queue when it comes back, and its attempt keeps no response snippet
--   parked     its endpoint is disabled or its circuit not closed: never claimed
--   held       a keyed row behind its key's head: only the head of an (endpoint, key) is not held
--
-- next_attempt_at keeps a real time in every state (no sentinel), so a parked or held row is out
-- of the claim's indexes by their predicates instead of by sorting at the far end of them.
ALTER TABLE delivery_queue ADD COLUMN state text NOT NULL DEFAULT 'scheduled';
UPDATE delivery_queue SET
  state = CASE WHEN lease_expires_at IS NOT NULL THEN 'leased' WHEN held THEN 'held'
               WHEN next_attempt_at = 'infinity' THEN 'parked' ELSE 'scheduled' END,
  next_attempt_at = CASE WHEN next_attempt_at = 'infinity' THEN now() ELSE next_attempt_at END
WHERE lease_expires_at IS NOT NULL OR held OR next_attempt_at = 'infinity';

ALTER TABLE delivery_queue
  ADD CONSTRAINT delivery_queue_state_check
    CHECK (state IN ('scheduled', 'leased', 'cancelling', 'parked', 'held')),
  -- a lease exactly while in flight
  ADD CONSTRAINT delivery_queue_lease_check
    CHECK ((lease_expires_at IS NOT NULL) = (state IN ('leased', 'cancelling'))),
  ADD CONSTRAINT delivery_queue_finite_check CHECK (next_attempt_at < 'infinity');

-- The same indexes, with the state as their predicate. The claim's two keep their columns, so the
-- claim's plan keeps its shape: waiting rows in due order, and per endpoint.
DROP INDEX delivery_queue_due_idx, delivery_queue_endpoint_due_idx, delivery_queue_held_idx,
  delivery_queue_key_head_idx;
ALTER TABLE delivery_queue DROP COLUMN held;
CREATE INDEX delivery_queue_due_idx ON delivery_queue (next_attempt_at) WHERE state = 'scheduled';
CREATE INDEX delivery_queue_endpoint_due_idx ON delivery_queue (endpoint_id, next_attempt_at)
  WHERE state = 'scheduled';
-- Parked rows by endpoint: unpark, the probe and the sweep find them here; they no longer sit at
-- the end of the claim's indexes.
CREATE INDEX delivery_queue_parked_idx ON delivery_queue (endpoint_id, next_attempt_at) WHERE state = 'parked';
-- The next head to release: a key's held rows in sequence order.
CREATE INDEX delivery_queue_held_idx ON delivery_queue (endpoint_id, ordering_key, sequence) WHERE state = 'held';
-- "Does this key have a head?": at most one entry per key.
CREATE INDEX delivery_queue_key_head_idx ON delivery_queue (endpoint_id, ordering_key)
  WHERE ordering_key IS NOT NULL AND state <> 'held';
