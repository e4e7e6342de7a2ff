/**
 * What one tenant may make hookpost do to third parties, read from the environment for
 * config.ts: how many endpoints it may have, and how many bulk replays and resends it may have
 * running at once. Each has a generous default; an operator tightens it per deployment.
 */
import { type Env, numberVar } from './config-vars.js';

export interface TenantLimits {
  /** Live (not deleted) endpoints one tenant may have (HOOKPOST_MAX_ENDPOINTS_PER_TENANT). */
  maxEndpointsPerTenant: number;
  /** Bulk replays and resends one tenant may have running at once. */
  maxReplaysPerTenant: number;
}

export function tenantLimits(env: Env): TenantLimits {
  return {
    maxEndpointsPerTenant: numberVar(env, 'HOOKPOST_MAX_ENDPOINTS_PER_TENANT', 1000, {
      min: 1,
      integer: true,
    }),
    maxReplaysPerTenant: numberVar(env, 'HOOKPOST_MAX_REPLAYS_PER_TENANT', 2, { min: 1, integer: true }),
  };
}
