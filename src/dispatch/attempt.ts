/**
 * One attempt's wire and record: the headers a delivery is sent with (Standard Webhooks
 * signature, the endpoint's own headers, hookpost-sequence for keyed ones) and the result the
 * completion writer stores. Pure functions, so the dispatcher keeps only the flow.
 */

import type { Decision } from '../deliveries/retry-policy.js';
import type { ClaimedDelivery } from '../queue/claim.js';
import type { CompletedAttempt } from '../queue/complete.js';
import type { DispatchEndpoint } from './endpoint-cache.js';
import { addLegacySignature } from './partner-credentials.js';
import type { SendResult } from './sender.js';
import { signatureHeader } from './signing.js';

export function attemptHeaders(
  endpoint: DispatchEndpoint,
  job: ClaimedDelivery,
  timestamp: number,
): Record<string, string> {
  const headers: Record<string, string> = {
    ...endpoint.headers,
    'content-type': 'application/json',
    'webhook-id': job.messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(endpoint.keys, job.messageId, timestamp, job.payload),
  };
  // Keyed deliveries carry their number within (endpoint, ordering key): gaps and stale events show.
  if (job.sequence !== null) headers['hookpost-sequence'] = job.sequence;
  const credentials = endpoint.credentials;
  if (credentials) {
    // The Standard Webhooks headers above are always sent; a partner's old format goes beside them.
    if (credentials.legacy) addLegacySignature(headers, credentials.legacy, timestamp, job.payload);
    if (credentials.basic) headers.authorization = credentials.basic;
  }
  return headers;
}

export function attemptRecord(
  job: ClaimedDelivery,
  endpoint: Pick<DispatchEndpoint, 'inFlightLimited'>,
  startedAt: Date,
  result: SendResult,
  decision: Decision,
): CompletedAttempt {
  const { outcome } = result;
  return {
    deliveryId: job.id,
    endpointId: job.endpointId,
    leaseToken: job.leaseToken,
    attempt: job.attempt,
    startedAt,
    durationMs: result.durationMs,
    statusCode: outcome.statusCode ?? null,
    // The attempt log keeps three outcomes; a shutdown is a retryable one of class 'shutdown'.
    outcome: outcome.kind === 'shutdown' ? 'retryable' : outcome.kind,
    errorClass: outcome.kind === 'success' ? null : outcome.errorClass,
    error: result.error,
    snippet: result.snippet,
    status: decision.status,
    delayMs: decision.status === 'failed' ? decision.delayMs : 0,
    charged: decision.status !== 'failed' || decision.charged,
    keyed: job.sequence !== null,
    freesSlot: endpoint.inFlightLimited,
  };
}
