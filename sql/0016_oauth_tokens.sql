-- OAuth2 client-credentials tokens, shared by every dispatcher and kept across restarts, so that
-- N processes ask a partner's token endpoint for one token per lifetime instead of N. Sealed like
-- every credential; `client_hash` names the client configuration it was issued for (a changed
-- secret or scope is a miss), `token_hash` lets a process drop the token a partner refused
-- without dropping one another process fetched meanwhile. A small table of short-lived rows:
-- one per endpoint with OAuth, rewritten once per token lifetime.
CREATE TABLE endpoint_oauth_tokens (
  endpoint_id text PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
  client_hash text NOT NULL,
  access_token text NOT NULL,
  token_hash text NOT NULL,
  renew_at timestamptz NOT NULL
);
