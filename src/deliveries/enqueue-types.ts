/** What an enqueue takes and answers, shared by the enqueue statement and its idempotency checks. */
import type { TenantScope } from '../tenants/scope.js';

export interface EnqueueItem {
  /**
   * The tenant the request named, or the key's own; null when neither did (then the explicit
   * endpoint's tenant, or `default` for a fan-out).
   */
  tenantId: string | null;
  endpointId: string | null;
  eventType: string;
  eventId: string | null;
  orderingKey: string | null;
  idempotencyKey: string | null;
  payload: Buffer;
}

export interface EnqueuedDelivery {
  id: string;
  endpointId: string;
  status: string;
}

export interface EnqueueResult {
  messageId: string;
  /** True when an earlier request with the same key or event id already created this message. */
  duplicate: boolean;
  deliveries: EnqueuedDelivery[];
  /**
   * Endpoints the enqueue picked (named, or by subscription) whose content filter the payload did
   * not match: no delivery for them. Empty for a duplicate (no filter ran again).
   */
  filtered: string[];
}

/** Why a request cannot be enqueued; `index` is the offending item in a batch. */
export class EnqueueError extends Error {
  constructor(
    readonly kind: 'endpoint_not_found' | 'tenant_not_found' | 'idempotency_conflict',
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}

/** Who enqueues: the key (recorded as the message's producer) and its tenant scope. */
export interface Producer extends TenantScope {
  keyId: string;
}
