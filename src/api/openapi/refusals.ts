/** The answers of admission (src/api/admission.ts), shared by every route that passes it. */
import { errorSchema } from './registry.js';

export const retryAfter = { 'retry-after': { description: 'seconds to wait', schema: { type: 'integer' } } };

/** A request refused before anything was stored; the body is the usual Error. */
export const enqueueRefusals = {
  429: {
    description: "over the key's rate_limit_per_second (rate_limited)",
    headers: retryAfter,
    schema: errorSchema,
  },
  503: {
    description: 'backlog full (backlog_full) or the database unavailable (database_unavailable)',
    headers: retryAfter,
    schema: errorSchema,
  },
};

/** A bulk replay or resend beyond the tenant's runs at once (HOOKPOST_MAX_REPLAYS_PER_TENANT). */
export const tooManyRunsRefusal = {
  429: {
    description: 'the tenant already has HOOKPOST_MAX_REPLAYS_PER_TENANT runs going (too_many_replays)',
    headers: retryAfter,
    schema: errorSchema,
  },
};
