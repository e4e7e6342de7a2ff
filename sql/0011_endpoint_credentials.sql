-- Reaching partners: credentials an endpoint sends with besides its signing keys.
--
-- Each is one jsonb column on the endpoint row, read with it by the dispatcher's sending-config
-- query (no join on the hot path, and NULL for the endpoints that have none). Secret fields inside
-- them (`password`, `client_secret`, `client_key`, the legacy `secret`) hold sealed values in the
-- same `v2:<key id>:…` form as signing secrets and header values (src/endpoints/secrets.ts), so the
-- re-encryption pass seals them again after a key rotation; the other fields (user name, token
-- URL, certificates) are not secret and stay readable.
ALTER TABLE endpoints
  ADD COLUMN auth jsonb,
  ADD COLUMN tls jsonb,
  ADD COLUMN legacy_signature jsonb,
  -- When the client certificate in `tls` ends (written with it: PostgreSQL cannot read a PEM),
  -- and when its coming end was last announced: the daily endpoint.certificate_expiring event
  -- is claimed by one UPDATE of this column, so every dispatcher may run the check.
  ADD COLUMN client_certificate_expires_at timestamptz,
  ADD COLUMN certificate_warned_at timestamptz;

CREATE INDEX endpoints_client_certificate_expiry_idx ON endpoints (client_certificate_expires_at)
  WHERE client_certificate_expires_at IS NOT NULL;

-- The three are part of what a dispatcher caches about the endpoint: a change bumps its version
-- and notifies, like a change of URL, headers or retry policy (sql/0004, sql/0007; this replaces
-- 0007's function and keeps every column it watched).
CREATE OR REPLACE FUNCTION endpoints_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.config_version = OLD.config_version
     AND (NEW.url, NEW.headers, NEW.enabled, NEW.deleted_at, NEW.max_attempts, NEW.retry_base_seconds,
          NEW.retry_cap_seconds, NEW.auth, NEW.tls, NEW.legacy_signature)
         IS NOT DISTINCT FROM (OLD.url, OLD.headers, OLD.enabled, OLD.deleted_at, OLD.max_attempts,
          OLD.retry_base_seconds, OLD.retry_cap_seconds, OLD.auth, OLD.tls, OLD.legacy_signature) THEN
    RETURN NEW;
  END IF;
  NEW.config_version := OLD.config_version + 1;
  PERFORM pg_notify('hookpost_endpoint_changed', NEW.id);
  RETURN NEW;
END $$;
