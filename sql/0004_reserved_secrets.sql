-- Placeholder for migration 0004, which the secrets branch adds. The migrator requires gapless
-- numbering, so the tenants branch (0005) carries this empty file until the merge; when merging,
-- delete this file and keep the secrets branch's 0004.
SELECT 1;
