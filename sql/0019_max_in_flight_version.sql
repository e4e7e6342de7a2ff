-- A change of max_in_flight is a change of the endpoint's sending configuration: the dispatcher
-- writes the results of an endpoint with max_in_flight at once (its leased queue rows count
-- against the limit until then) and lets the others linger (src/dispatch/completions.ts), so its
-- endpoint cache must see the setting change at the next claim batch, as it sees a new URL.
CREATE OR REPLACE FUNCTION endpoints_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.config_version = OLD.config_version
     AND (NEW.url, NEW.headers, NEW.enabled, NEW.deleted_at, NEW.max_attempts, NEW.retry_base_seconds,
          NEW.retry_cap_seconds, NEW.auth, NEW.tls, NEW.legacy_signature, NEW.propagate_trace,
          NEW.max_in_flight)
         IS NOT DISTINCT FROM (OLD.url, OLD.headers, OLD.enabled, OLD.deleted_at, OLD.max_attempts,
          OLD.retry_base_seconds, OLD.retry_cap_seconds, OLD.auth, OLD.tls, OLD.legacy_signature,
          OLD.propagate_trace, OLD.max_in_flight) THEN
    RETURN NEW;
  END IF;
  NEW.config_version := OLD.config_version + 1;
  PERFORM pg_notify('hookpost_endpoint_changed', NEW.id);
  RETURN NEW;
END $$;
