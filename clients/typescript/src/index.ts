/**
 * @hookpost/client: a typed client for the hookpost API (generated from its /openapi.json) and
 * verifyWebhook() for the receivers of its webhooks. Receivers that only verify can import
 * `@hookpost/client/verify`, which loads nothing else.
 */
export {
  type BatchItem,
  createHookpostClient,
  type HookpostClient,
  type HookpostClientOptions,
  type HookpostMethod,
  type HookpostResult,
  type ListItem,
  type ListPath,
} from './client.js';
export { HookpostError, type HookpostErrorBody } from './errors.js';
export type { components, operations, paths } from './generated/openapi.js';
export type { RetryOptions } from './retry.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from './verify.js';

import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];
/** A delivery as lists show it. */
export type Delivery = Schemas['Delivery'];
/** A delivery with its attempts (`GET /v1/deliveries/{id}`). */
export type DeliveryDetail = Schemas['DeliveryDetail'];
/** One attempt of a delivery. */
export type Attempt = Schemas['Attempt'];
/** An endpoint as reads show it (credentials masked). */
export type Endpoint = Schemas['Endpoint'];
/** An endpoint as its creation and rotation show it, with its secret or public key. */
export type EndpointWithSecret = Schemas['EndpointWithSecret'];
/** The answer to an enqueue: the message id and one delivery per endpoint reached. */
export type EnqueueResult = Schemas['EnqueueResult'];
/** A stored message with its payload (`GET /v1/messages`). */
export type Message = Schemas['Message'];
