/**
 * What an endpoint's own retry policy may be. Any caller: the effective cap must not be below the
 * effective base. A tenant-bound key (a tenant's integration, a partner's portal) may only make
 * the policy gentler on the partner than the operator's: no more attempts, no shorter waits; the
 * attempts are requests hookpost sends to a third party on the tenant's behalf.
 */
import type { RetryPolicy } from '../deliveries/retry-policy.js';
import type { Endpoint } from '../endpoints/store.js';
import type { Caller } from '../tenants/scope.js';
import { HttpError } from './errors.js';

export interface RetryFields {
  max_attempts?: number | null | undefined;
  retry_base_seconds?: number | null | undefined;
  retry_cap_seconds?: number | null | undefined;
}

function refuse(field: string, message: string): never {
  throw new HttpError(400, 'validation_failed', `${field}: ${message}`, [{ field, message }]);
}

/**
 * Checks a create or PATCH body's retry fields; `current` is the stored endpoint on a PATCH (a
 * field left out keeps its stored value). Null always passes the tenant rule: it means the
 * operator's own value.
 */
export function checkRetryPolicy(caller: Caller, global: RetryPolicy, body: RetryFields, current?: Endpoint) {
  if (caller.tenantId !== null) {
    if (body.max_attempts != null && body.max_attempts > global.maxAttempts) {
      refuse('max_attempts', `must be at most ${global.maxAttempts} (the operator's HOOKPOST_MAX_ATTEMPTS)`);
    }
    if (body.retry_base_seconds != null && body.retry_base_seconds < global.baseSeconds) {
      refuse(
        'retry_base_seconds',
        `must be at least ${global.baseSeconds} (the operator's HOOKPOST_RETRY_BASE_SECONDS)`,
      );
    }
    if (body.retry_cap_seconds != null && body.retry_cap_seconds < global.capSeconds) {
      refuse(
        'retry_cap_seconds',
        `must be at least ${global.capSeconds} (the operator's HOOKPOST_RETRY_CAP_SECONDS)`,
      );
    }
  }
  if (body.retry_base_seconds === undefined && body.retry_cap_seconds === undefined) return;
  // A base above the cap would make every backoff the cap; the config requires the same of the globals.
  const base =
    (body.retry_base_seconds === undefined ? current?.retryBaseSeconds : body.retry_base_seconds) ??
    global.baseSeconds;
  const cap =
    (body.retry_cap_seconds === undefined ? current?.retryCapSeconds : body.retry_cap_seconds) ??
    global.capSeconds;
  if (cap < base)
    refuse(
      'retry_cap_seconds',
      `must be >= retry_base_seconds (the cap would be ${cap} s, the base ${base} s)`,
    );
}
