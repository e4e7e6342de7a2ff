-- Tenants, API keys, the audit log and the event-type catalog. Why each piece looks the way it
-- does: docs/architecture.md ("Tenants and the caller's scope").

-- A tenant is a customer whose endpoints receive events. Soft-deleted: the history of its
-- deliveries stays readable, and naming it again (PUT, endpoint create, enqueue) brings it back.
CREATE TABLE tenants (
  id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._:-]{1,128}$'),
  name       text NOT NULL DEFAULT '',
  metadata   jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
-- `default` holds everything from before tenants; `hookpost` is reserved for operational events.
INSERT INTO tenants (id, name) VALUES ('default', 'Default tenant'), ('hookpost', 'hookpost operational events');

-- Every endpoint and every message belongs to one tenant. A column added with a constant
-- default is a catalog change in PostgreSQL 11+, not a table rewrite, and it places every
-- existing endpoint and message in `default`: nothing moves, nothing is lost. The foreign key is
-- on endpoints (rare writes); messages, written on the hot path, carry the id without one.
ALTER TABLE endpoints ADD COLUMN tenant_id text NOT NULL DEFAULT 'default' REFERENCES tenants (id);
ALTER TABLE messages ADD COLUMN tenant_id text NOT NULL DEFAULT 'default';
CREATE INDEX endpoints_tenant_idx ON endpoints (tenant_id, id) WHERE deleted_at IS NULL;

-- Idempotency is per tenant: two customers' `evt_1` are different events. The old indexes were
-- per producer, and every producer was the one admin token, so existing rows cannot collide here.
DROP INDEX messages_idempotency_key_uq;
DROP INDEX messages_event_id_uq;
CREATE UNIQUE INDEX messages_idempotency_key_uq ON messages (tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX messages_event_id_uq ON messages (tenant_id, event_id) WHERE event_id IS NOT NULL;

-- Fan-out by subscription, one GIN lookup per message that never leaves the tenant. Each live
-- endpoint is indexed under keys "<tenant>/<entry>" for every event_types entry ('order.*'
-- included as written), or "<tenant>/" when it takes every type. A message of type a.b.c in
-- tenant T asks for T/a.b.c, T/a.*, T/a.b.* and T/ with `&&`. Tenant ids cannot contain '/', so
-- keys of different tenants never meet. plpgsql, not sql: an inlined function would no longer
-- match the index expression.
CREATE FUNCTION hookpost_subscription_keys(tenant text, event_types text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF cardinality(event_types) = 0 THEN
    RETURN ARRAY[tenant || '/'];
  END IF;
  RETURN ARRAY(SELECT tenant || '/' || t FROM unnest(event_types) AS t);
END
$$;

CREATE FUNCTION hookpost_event_match_keys(tenant text, event_type text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  parts text[] := string_to_array(event_type, '.');
  keys text[] := ARRAY[tenant || '/', tenant || '/' || event_type];
BEGIN
  FOR n IN 1 .. cardinality(parts) - 1 LOOP
    keys := keys || (tenant || '/' || array_to_string(parts[1:n], '.') || '.*');
  END LOOP;
  RETURN keys;
END
$$;

DROP INDEX endpoints_event_types_idx;
CREATE INDEX endpoints_subscription_idx ON endpoints
  USING gin (hookpost_subscription_keys(tenant_id, event_types)) WHERE deleted_at IS NULL;

-- API keys. Only the SHA-256 of a key is stored (a key is 256 random bits, so a plain hash
-- cannot be reversed or guessed; a slow hash would only slow every request). `prefix` is the
-- first characters, enough to recognise a key in a list. The admin token is the row `key_admin`.
CREATE TABLE api_keys (
  id                    text PRIMARY KEY,
  name                  text NOT NULL,
  kind                  text NOT NULL DEFAULT 'key' CHECK (kind IN ('key', 'admin', 'portal')),
  prefix                text NOT NULL,
  key_hash              bytea NOT NULL UNIQUE,
  scopes                text[] NOT NULL,
  tenant_id             text REFERENCES tenants (id),
  rate_limit_per_second double precision CHECK (rate_limit_per_second > 0),
  expires_at            timestamptz,
  created_by            text,
  created_at            timestamptz NOT NULL DEFAULT now(),
  last_used_at          timestamptz,
  revoked_at            timestamptz
);

-- The per-key enqueue rate limit, shared by every API process: a token bucket per key, one
-- single-row UPDATE per enqueue request of a limited key (src/tenants/rate-limit.ts). No index
-- covers a changing column, so the update is HOT; fillfactor leaves room on the page for it.
CREATE TABLE api_key_buckets (
  key_id       text PRIMARY KEY REFERENCES api_keys (id),
  tokens       double precision NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_granted boolean NOT NULL DEFAULT true
) WITH (fillfactor = 50);

-- Who did what: tenants, endpoints, keys, rotations, replays, portal sessions. Never a secret:
-- `details` holds field names and ids, not values of secrets or headers.
CREATE TABLE audit_log (
  id            text PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  actor_key_id  text NOT NULL,
  actor_name    text NOT NULL,
  action        text NOT NULL,
  resource_type text NOT NULL,
  resource_id   text NOT NULL,
  tenant_id     text,
  details       jsonb NOT NULL DEFAULT '{}'
);

-- Replays keep their own progress row (replay_audit); it now names the key that started it,
-- and the audit log links to it by resource_id.
ALTER TABLE replay_audit ADD COLUMN actor_key_id text, ADD COLUMN tenant_id text;

-- The event-type catalog. `schema_version` grows with every change of `schema`, so an API
-- process compiles each version once and knows when its compiled validator is stale.
CREATE TABLE event_types (
  name           text PRIMARY KEY,
  description    text NOT NULL DEFAULT '',
  schema         jsonb,
  example        jsonb,
  deprecated     boolean NOT NULL DEFAULT false,
  schema_version integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
