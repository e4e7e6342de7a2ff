/** A request's `tenant_id` for a create or an enqueue, checked against the caller's key. */
import type { Caller } from '../tenants/scope.js';
import { hasScope, OPERATIONS_TENANT } from '../tenants/scope.js';
import { HttpError } from './errors.js';

/**
 * The tenant a write goes to: the one named, else the key's own; undefined when neither says
 * (the caller picks the default). A tenant-bound key naming another tenant gets the same 404 as
 * for an unknown tenant; the reserved `hookpost` tenant is for admin keys only.
 */
export function tenantForWrite(caller: Caller, requested: string | undefined): string | undefined {
  if (caller.tenantId !== null && requested !== undefined && requested !== caller.tenantId) {
    throw new HttpError(404, 'tenant_not_found', `tenant ${requested} not found`);
  }
  const tenantId = requested ?? caller.tenantId ?? undefined;
  if (tenantId === OPERATIONS_TENANT && !hasScope(caller, 'admin')) {
    throw new HttpError(403, 'forbidden', `the tenant ${OPERATIONS_TENANT} is reserved for admin keys`, {
      required_scope: 'admin',
    });
  }
  return tenantId;
}
