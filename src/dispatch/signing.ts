/**
 * Standard Webhooks signing over "{id}.{timestamp}.{body}":
 * `v1,<base64 HMAC-SHA256(secret bytes, content)>` for whsec_ secrets and
 * `v1a,<base64 Ed25519 signature>` for whsk_ private keys.
 */
import { createHmac, createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { PRIVATE_KEY_PREFIX, secretKeyBytes } from '../endpoints/secrets.js';

export type SigningKey = { scheme: 'v1'; key: Buffer } | { scheme: 'v1a'; key: KeyObject };

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** Turns a decrypted secret (whsec_… or whsk_…) into a key ready to sign with. */
export function signingKey(secret: string): SigningKey {
  if (secret.startsWith(PRIVATE_KEY_PREFIX)) {
    const seed = Buffer.from(secret.slice(PRIVATE_KEY_PREFIX.length), 'base64');
    if (seed.length !== 32) throw new Error('an Ed25519 private key must be 32 bytes');
    const der = Buffer.concat([ED25519_PKCS8_PREFIX, seed]);
    return { scheme: 'v1a', key: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }) };
  }
  return { scheme: 'v1', key: secretKeyBytes(secret) };
}

/** One signature per key, space-separated, as Standard Webhooks specifies during a rotation. */
export function signatureHeader(
  keys: (Buffer | SigningKey)[],
  messageId: string,
  timestamp: number,
  body: Buffer,
): string {
  const prefix = `${messageId}.${timestamp}.`;
  return keys
    .map((k) => {
      const key: SigningKey = Buffer.isBuffer(k) ? { scheme: 'v1', key: k } : k;
      if (key.scheme === 'v1a') {
        // Ed25519 signs the whole message in one pass (no streaming): join it once.
        return `v1a,${sign(null, Buffer.concat([Buffer.from(prefix), body]), key.key).toString('base64')}`;
      }
      return `v1,${createHmac('sha256', key.key).update(prefix).update(body).digest('base64')}`;
    })
    .join(' ');
}
