-- Replay, version 2: progress of a paced bulk replay, and which deliveries each replay touched.
-- Why replays look the way they do: docs/architecture.md ("Replay").

-- A bulk replay runs for matched / HOOKPOST_REPLAY_RATE_PER_SECOND seconds, one short transaction
-- per batch, so its audit row is written first and then advanced by every batch: `replayed` is
-- always the number of deliveries actually requeued, and `state` tells a finished replay from
-- one that is still running or was interrupted (the rest of the matched deliveries then stay
-- dead-lettered; running the same filter again picks them up).
ALTER TABLE replay_audit
  ADD COLUMN state       text NOT NULL DEFAULT 'finished'
                         CHECK (state IN ('running', 'finished', 'interrupted', 'failed')),
  ADD COLUMN skipped     integer NOT NULL DEFAULT 0,
  ADD COLUMN updated_at  timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN finished_at timestamptz;

-- One row per delivery a replay requeued, with the state it was taken from. Written in the same
-- transaction as the requeue, so it never claims a replay that did not happen. A replay restarts
-- the delivery's attempt numbering (the retry budget is fresh); these rows, together with the
-- attempt log's started_at, show where each round began.
CREATE TABLE replayed_deliveries (
  audit_id               text NOT NULL REFERENCES replay_audit (id),
  delivery_id            text NOT NULL,
  previous_status        text NOT NULL,
  previous_attempt_count integer NOT NULL,
  previous_dead_at       timestamptz,
  replayed_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (audit_id, delivery_id)
);
-- A delivery's replays, for GET /v1/deliveries/{id}.
CREATE INDEX replayed_deliveries_delivery_idx ON replayed_deliveries (delivery_id);
