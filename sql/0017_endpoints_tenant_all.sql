-- A tenant's endpoints, deleted ones included (their delivery history stays listed): the
-- deliveries list of a tenant-bound key reads its page per endpoint of the tenant
-- (src/deliveries/read.ts), so that it never walks other tenants' deliveries. endpoints_tenant_idx
-- (0005) holds live endpoints only. A small table: plain CREATE INDEX, as 0013.
CREATE INDEX endpoints_tenant_all_idx ON endpoints (tenant_id, id);
