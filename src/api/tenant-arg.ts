/** A request's `tenant_id` for a create or an enqueue, checked against the caller's key. */
import type { Caller } from '../tenants/scope.js';
import { OPERATIONS_TENANT } from '../tenants/scope.js';
import { HttpError } from './errors.js';

/**
 * The tenant a write goes to: the one named, else the key's own; undefined when neither says
 * (the caller picks the default). A tenant-bound key naming another tenant gets the same 404 as
 * for an unknown tenant, and so does any key but an admin one naming the reserved `hookpost`
 * tenant: for it that tenant does not exist (tenants/scope.ts, `operations`).
 */
export function tenantForWrite(caller: Caller, requested: string | undefined): string | undefined {
  if (caller.tenantId !== null && requested !== undefined && requested !== caller.tenantId) {
    throw new HttpError(404, 'tenant_not_found', `tenant ${requested} not found`);
  }
  const tenantId = requested ?? caller.tenantId ?? undefined;
  if (tenantId === OPERATIONS_TENANT && !caller.operations) {
    throw new HttpError(404, 'tenant_not_found', `tenant ${tenantId} not found`);
  }
  return tenantId;
}
