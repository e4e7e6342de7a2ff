-- Endpoint secrets, part 2: Ed25519 (v1a) signing, encrypted custom headers, and a version that
-- tells dispatchers an endpoint's sending configuration changed.

-- Fixed at creation: 'v1' signs with HMAC-SHA256 secrets (whsec_), 'v1a' with Ed25519 key pairs.
ALTER TABLE endpoints ADD COLUMN signature_scheme text NOT NULL DEFAULT 'v1'
  CHECK (signature_scheme IN ('v1', 'v1a'));

-- For a v1a row, `secret` holds the sealed whsk_ private key and this its whpk_ public key
-- (not secret: partners verify with it, the API shows it). NULL for v1 rows.
ALTER TABLE endpoint_secrets ADD COLUMN public_key text;

-- Custom header values are sealed like secrets from now on, one value at a time (names stay
-- readable). Values stored before this migration are plain text: mark them as such, so that no
-- header that happens to start with "v1:" is ever taken for a sealed one. The dispatchers'
-- re-encryption pass seals them under HOOKPOST_SECRET_KEY when one is set.
UPDATE endpoints
SET headers = (SELECT jsonb_object_agg(key, 'plain:' || value) FROM jsonb_each_text(headers))
WHERE headers <> '{}'::jsonb;

-- Bumped whenever something a dispatcher caches about the endpoint changes (URL, headers,
-- enabled, deleted, signing keys). Dispatchers compare it once per claim batch (one primary-key
-- lookup per distinct endpoint) and reload only what changed, so a rotation, a URL change or a
-- disable shows in the very next attempt; the NOTIFY below also updates entries already held
-- in a dispatcher's local buffer.
ALTER TABLE endpoints ADD COLUMN config_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION endpoints_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.config_version = OLD.config_version
     AND (NEW.url, NEW.headers, NEW.enabled, NEW.deleted_at)
         IS NOT DISTINCT FROM (OLD.url, OLD.headers, OLD.enabled, OLD.deleted_at) THEN
    RETURN NEW;
  END IF;
  NEW.config_version := OLD.config_version + 1;
  PERFORM pg_notify('hookpost_endpoint_changed', NEW.id);
  RETURN NEW;
END $$;

-- A trigger rather than code in each writer: endpoints are disabled from several places (API,
-- 410 Gone, the breaker's auto-disable, tenant deletion), and none of them can forget it.
CREATE TRIGGER endpoints_config_version BEFORE UPDATE ON endpoints
  FOR EACH ROW EXECUTE FUNCTION endpoints_config_version();

-- A change of signing keys bumps the endpoint's version (and so notifies) through the trigger
-- above. Re-sealing a value under a new key changes no plaintext and skips this on purpose.
CREATE FUNCTION endpoint_secrets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE endpoints SET config_version = config_version + 1
  WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.endpoint_id ELSE NEW.endpoint_id END;
  RETURN NULL;
END $$;

CREATE TRIGGER endpoint_secrets_changed AFTER INSERT OR DELETE OR UPDATE OF expires_at ON endpoint_secrets
  FOR EACH ROW EXECUTE FUNCTION endpoint_secrets_changed();
