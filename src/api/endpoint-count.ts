/** The cap on one tenant's live endpoints, checked inside the create's transaction. */
import type { Executor } from '../db/connect.js';
import { HttpError } from './errors.js';

/**
 * 409 too_many_endpoints when the tenant already has `max` live endpoints. The caller holds the
 * tenant's row lock (lockTenant), so the count cannot go stale before the insert commits.
 */
export async function checkEndpointCount(tx: Executor, tenantId: string, max: number): Promise<void> {
  const [row] = await tx<{ n: number }[]>`
    SELECT count(*)::int AS n FROM endpoints WHERE tenant_id = ${tenantId} AND deleted_at IS NULL`;
  if (row!.n < max) return;
  throw new HttpError(
    409,
    'too_many_endpoints',
    `tenant ${tenantId} has ${row!.n} endpoints, the most allowed (HOOKPOST_MAX_ENDPOINTS_PER_TENANT): delete one first`,
    { limit: max },
  );
}
