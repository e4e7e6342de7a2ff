-- OpenTelemetry traces (docs/tracing.md). All of it NULL/false unless tracing is on, so a
-- deployment without it stores nothing more than a null bit per row.

-- The W3C traceparent of the enqueue request's span, written by the enqueue statement itself (no
-- round trip of its own); every attempt of the message's deliveries is a span of that trace.
ALTER TABLE messages ADD COLUMN traceparent text;

-- A replay or resend starts a trace of its own: the request's traceparent is kept on its audit
-- row (a bulk replay requeues in later transactions, possibly in another process) and copied to
-- each queue row it requeues; attempts then continue that trace and link to the message's.
ALTER TABLE replay_audit ADD COLUMN traceparent text;
ALTER TABLE delivery_queue ADD COLUMN traceparent text;

-- Send `traceparent` to this partner (off by default: a trace id says something about the
-- sender's internals, and some receivers reject unknown headers).
ALTER TABLE endpoints ADD COLUMN propagate_trace boolean NOT NULL DEFAULT false;

-- propagate_trace is part of what a dispatcher caches about the endpoint: a change bumps its
-- version and notifies (sql/0004; this replaces 0011's function and keeps every column it watched).
CREATE OR REPLACE FUNCTION endpoints_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.config_version = OLD.config_version
     AND (NEW.url, NEW.headers, NEW.enabled, NEW.deleted_at, NEW.max_attempts, NEW.retry_base_seconds,
          NEW.retry_cap_seconds, NEW.auth, NEW.tls, NEW.legacy_signature, NEW.propagate_trace)
         IS NOT DISTINCT FROM (OLD.url, OLD.headers, OLD.enabled, OLD.deleted_at, OLD.max_attempts,
          OLD.retry_base_seconds, OLD.retry_cap_seconds, OLD.auth, OLD.tls, OLD.legacy_signature,
          OLD.propagate_trace) THEN
    RETURN NEW;
  END IF;
  NEW.config_version := OLD.config_version + 1;
  PERFORM pg_notify('hookpost_endpoint_changed', NEW.id);
  RETURN NEW;
END $$;
