-- Version 9: operational events' per-minute cap and per-endpoint retry policy. Why:
-- docs/architecture.md ("Operational events", "Per-endpoint retry policy").

-- One row per source endpoint and minute that dead-lettered something while the `hookpost`
-- tenant had endpoints. The completion and the reaper upsert it in the statement that
-- dead-letters, so the cap holds across dispatcher processes (the upsert serialises them on
-- this row, only for statements that dead-letter). `summarized` is set by the one statement that
-- emits the minute's `delivery.dead_lettered.summary` once the minute is over.
CREATE TABLE ops_event_counters (
  endpoint_id   text NOT NULL,
  minute        timestamptz NOT NULL,
  dead_lettered integer NOT NULL,
  summarized    boolean NOT NULL DEFAULT false,
  PRIMARY KEY (endpoint_id, minute)
);
-- The summary tick looks for finished minutes over the cap that have not been summarised.
CREATE INDEX ops_event_counters_open_idx ON ops_event_counters (minute) WHERE NOT summarized;

-- Per-endpoint overrides of HOOKPOST_MAX_ATTEMPTS / _RETRY_BASE_SECONDS / _RETRY_CAP_SECONDS
-- (NULL: the global default). The bounds match the API's validation.
ALTER TABLE endpoints
  ADD COLUMN max_attempts integer CHECK (max_attempts BETWEEN 1 AND 50),
  ADD COLUMN retry_base_seconds double precision CHECK (retry_base_seconds >= 0.1 AND retry_base_seconds <= 86400),
  ADD COLUMN retry_cap_seconds double precision CHECK (retry_cap_seconds >= 0.1 AND retry_cap_seconds <= 604800);

-- A change of the retry settings must reach the dispatchers' endpoint caches like a URL change
-- does: the version trigger (sql/0004) now also watches them.
CREATE OR REPLACE FUNCTION endpoints_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.config_version = OLD.config_version
     AND (NEW.url, NEW.headers, NEW.enabled, NEW.deleted_at, NEW.max_attempts, NEW.retry_base_seconds, NEW.retry_cap_seconds)
         IS NOT DISTINCT FROM (OLD.url, OLD.headers, OLD.enabled, OLD.deleted_at, OLD.max_attempts, OLD.retry_base_seconds, OLD.retry_cap_seconds) THEN
    RETURN NEW;
  END IF;
  NEW.config_version := OLD.config_version + 1;
  PERFORM pg_notify('hookpost_endpoint_changed', NEW.id);
  RETURN NEW;
END $$;
