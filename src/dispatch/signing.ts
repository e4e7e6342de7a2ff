/** Standard Webhooks signing: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>. */
import { createHmac } from 'node:crypto';

/** One `v1,…` per key, space-separated, as Standard Webhooks specifies during a rotation. */
export function signatureHeader(keys: Buffer[], messageId: string, timestamp: number, body: Buffer): string {
  const prefix = `${messageId}.${timestamp}.`;
  return keys
    .map((key) => `v1,${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`)
    .join(' ');
}
