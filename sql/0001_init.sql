-- hookpost schema, version 1. Why each table, index and storage setting looks the way it
-- does is explained in docs/architecture.md ("Schema").

-- Time-ordered ids: 12 hex digits of Unix milliseconds, then 20 random hex digits. Ordered
-- by creation, so primary-key inserts append to the right edge of the B-tree and keyset
-- pagination by id is pagination by creation time. src/ids.ts generates the same format.
CREATE FUNCTION hookpost_id(prefix text) RETURNS text
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT prefix
      || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
      || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20)
$$;

CREATE TABLE endpoints (
  id                    text PRIMARY KEY,
  url                   text NOT NULL,
  description           text NOT NULL DEFAULT '',
  event_types           text[] NOT NULL DEFAULT '{}',
  rate_limit_per_second double precision CHECK (rate_limit_per_second > 0),
  max_in_flight         integer CHECK (max_in_flight > 0),
  headers               jsonb NOT NULL DEFAULT '{}',
  metadata              jsonb NOT NULL DEFAULT '{}',
  enabled               boolean NOT NULL DEFAULT true,
  disabled_reason       text,
  disabled_at           timestamptz,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  deleted_at            timestamptz
);
-- Fan-out looks endpoints up by event type: `event_types @> ARRAY[$type]` uses this index.
CREATE INDEX endpoints_event_types_idx ON endpoints USING gin (event_types) WHERE deleted_at IS NULL;

-- Signing secrets. Several rows per endpoint during a rotation: the old one keeps signing
-- until expires_at. `secret` is encrypted at rest when HOOKPOST_SECRET_KEY is set.
CREATE TABLE endpoint_secrets (
  endpoint_id text NOT NULL REFERENCES endpoints (id),
  secret      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at  timestamptz,
  PRIMARY KEY (endpoint_id, created_at)
);

-- One row per event handed to hookpost. The payload is kept as the exact bytes received.
-- request_hash (SHA-256 of the canonical request) decides "same body" for idempotent retries.
CREATE TABLE messages (
  id              text PRIMARY KEY,
  producer        text NOT NULL,
  event_type      text NOT NULL,
  event_id        text,
  idempotency_key text,
  ordering_key    text,
  endpoint_id     text,
  request_hash    bytea NOT NULL,
  payload         bytea NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- The unique indexes ARE the idempotency mechanism: INSERT .. ON CONFLICT DO NOTHING makes a
-- racing duplicate wait for the first writer and then skip, so no read-then-write race exists.
CREATE UNIQUE INDEX messages_idempotency_key_uq ON messages (producer, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX messages_event_id_uq ON messages (producer, event_id) WHERE event_id IS NOT NULL;

-- One row per message x endpoint: the delivery record (what the API shows). Its queue state
-- lives in delivery_queue. No index here covers a column that completion changes (status,
-- attempt_count, last_*), so the per-attempt update is a HOT update: no index entries, new row
-- version on the same page, which fillfactor 80 keeps room for. `in_flight` is not stored
-- here: a delivery is in flight while its delivery_queue row holds a lease.
CREATE TABLE deliveries (
  id               text PRIMARY KEY,
  message_id       text NOT NULL REFERENCES messages (id),
  endpoint_id      text NOT NULL REFERENCES endpoints (id),
  status           text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'delivered', 'failed', 'dead_letter', 'cancelled')),
  attempt_count    integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error_class text,
  last_error       text,
  last_duration_ms integer,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  delivered_at     timestamptz,
  dead_at          timestamptz
) WITH (fillfactor = 80);
CREATE INDEX deliveries_message_idx ON deliveries (message_id);
-- Listing and filtering per endpoint (API, replay, dead-letter analysis), newest first by id.
CREATE INDEX deliveries_endpoint_idx ON deliveries (endpoint_id, id);
-- Dead letters by time (analysis, bulk replay). Partial on dead_at, not on status: a delivered
-- row keeps dead_at NULL, so its completion update stays HOT.
CREATE INDEX deliveries_dead_at_idx ON deliveries (dead_at) WHERE dead_at IS NOT NULL;

-- The work queue: one small row per delivery that still has to be sent, deleted when the
-- delivery is settled. Claims and lease changes touch only this table, so the hot indexes stay
-- as small as the backlog however large the history grows.
CREATE TABLE delivery_queue (
  delivery_id      text PRIMARY KEY,
  endpoint_id      text NOT NULL,
  message_id       text NOT NULL,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  attempt_count    integer NOT NULL DEFAULT 0,
  lease_token      uuid,
  lease_expires_at timestamptz
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000);
-- The claim index: waiting rows in due order, so a claim reads the first N entries and stops.
-- Disabled endpoints' rows are parked at 'infinity', at the far end.
CREATE INDEX delivery_queue_due_idx ON delivery_queue (next_attempt_at) WHERE lease_expires_at IS NULL;
-- The reaper's index: leased rows by expiry.
CREATE INDEX delivery_queue_lease_idx ON delivery_queue (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
-- Fair claiming walks the endpoints that have waiting rows (a loose index scan over this index)
-- and takes each one's oldest due rows, so one endpoint's deep backlog cannot starve the rest.
CREATE INDEX delivery_queue_endpoint_due_idx ON delivery_queue (endpoint_id, next_attempt_at)
  WHERE lease_expires_at IS NULL;

-- Append-only attempt log. No primary key and no foreign key on purpose: it can be turned
-- into a table partitioned by started_at (dropping old partitions instead of DELETE) without
-- rewriting constraints, and inserting into it costs one index update.
CREATE TABLE delivery_attempts (
  delivery_id      text NOT NULL,
  endpoint_id      text NOT NULL,
  attempt          integer NOT NULL,
  started_at       timestamptz NOT NULL,
  duration_ms      integer NOT NULL,
  status_code      integer,
  outcome          text NOT NULL,
  error_class      text,
  error            text,
  response_snippet text
);
CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, attempt);

-- Circuit breaker, rate-limit bucket and latency summary per endpoint, shared by every
-- dispatcher process. A claim for a rate- or concurrency-limited endpoint locks this row, which
-- serialises those claims across processes.
CREATE TABLE endpoint_health (
  endpoint_id          text PRIMARY KEY REFERENCES endpoints (id),
  state                text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
  consecutive_failures integer NOT NULL DEFAULT 0,
  opened_at            timestamptz,
  cooldown_seconds     double precision,
  probe_delivery_id    text,
  failing_since        timestamptz,
  last_success_at      timestamptz,
  last_failure_at      timestamptz,
  tokens               double precision,
  tokens_at            timestamptz,
  p50_ms               integer,
  p95_ms               integer,
  p99_ms               integer,
  sample_count         integer NOT NULL DEFAULT 0,
  updated_at           timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);

-- Latency histogram per endpoint and minute: a rolling 24 h window is the sum of at most
-- 1440 small rows, whatever the attempt rate. Buckets are fixed (see src/endpoints/latency.ts).
CREATE TABLE endpoint_latency_minutes (
  endpoint_id text NOT NULL,
  minute      timestamptz NOT NULL,
  buckets     integer[] NOT NULL,
  PRIMARY KEY (endpoint_id, minute)
) WITH (fillfactor = 70);

-- Who replayed what, when, with which filter and how many rows.
CREATE TABLE replay_audit (
  id         text PRIMARY KEY,
  actor      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  filter     jsonb NOT NULL,
  dry_run    boolean NOT NULL,
  matched    integer NOT NULL,
  replayed   integer NOT NULL
);
