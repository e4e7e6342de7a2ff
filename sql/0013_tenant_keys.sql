-- Deleting a tenant revokes its API keys and portal sessions in the same transaction
-- (src/tenants/tenants.ts, deleteTenant). Portal sessions are keys too, one row per session, so
-- the table grows with every session ever opened: the revocation finds a tenant's live keys by
-- this index instead of reading the whole table. Small table, plain CREATE INDEX.
CREATE INDEX api_keys_tenant_live_idx ON api_keys (tenant_id) WHERE revoked_at IS NULL AND tenant_id IS NOT NULL;
