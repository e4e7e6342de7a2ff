/**
 * Response shapes of the recovery routes (events log, resend, expunge), kept apart from
 * responses.ts so that file stays with the routes it was written for.
 */
import { z } from 'zod';

const timestamp = z.string().meta({ format: 'date-time' });

export const messageSchema = z
  .object({
    id: z
      .string()
      .meta({ description: 'the message id, sent as `webhook-id`: dedup by it', examples: ['msg_…'] }),
    tenant_id: z.string(),
    event_type: z.string(),
    event_id: z.string().nullable(),
    ordering_key: z.string().nullable(),
    created_at: timestamp,
    payload_expired: z
      .boolean()
      .meta({ description: 'the bytes were erased (payload retention or expunge)' }),
    payload: z.unknown().meta({
      description: 'the payload exactly as accepted (the bytes the signature covers); null once expired',
    }),
  })
  .meta({ id: 'Message' });

export const messagePageSchema = z.object({
  data: z.array(messageSchema),
  next_cursor: z
    .string()
    .nullable()
    .meta({ description: 'pass as ?cursor= for the next page; null: nothing more now' }),
});

export const expungeSchema = z.object({
  message_id: z.string(),
  payload_expired: z.literal(true),
  payload_expired_at: timestamp,
  cancelled_deliveries: z.number().int(),
  erased_snippets: z.number().int(),
  audit_id: z.string(),
});

export const resendSchema = z.object({
  audit_id: z.string(),
  dry_run: z.boolean(),
  state: z.string(),
  matched: z
    .number()
    .int()
    .meta({ description: 'deliveries of the endpoint in the range (by the filter), up to limit' }),
  resent: z.number().int().meta({ description: 'requeued so far (all of them once state is finished)' }),
  skipped: z.number().int().meta({ description: 'matched but not requeued: the sum of the counts below' }),
  skipped_queued: z
    .number()
    .int()
    .meta({ description: 'already queued or in flight: sent anyway, not twice' }),
  skipped_payload_expired: z.number().int().meta({ description: 'nothing left to send' }),
});
