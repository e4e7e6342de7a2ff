/**
 * Endpoint signing secrets: generation (Standard Webhooks `whsec_` + base64 of 24 random bytes)
 * and encryption at rest with AES-256-GCM under HOOKPOST_SECRET_KEY. Without a key (local dev)
 * secrets are stored as `plain:`; production refuses to start without one (config.ts).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

/** The key bytes a secret signs with: the base64 after `whsec_`. */
export function secretKeyBytes(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

export interface SecretBox {
  seal(secret: string): string;
  open(stored: string): string;
}

/** Builds the at-rest codec. The stored form says how it was sealed, so a key can be added later. */
export function createSecretBox(secretKey: string | undefined): SecretBox {
  const key = secretKey === undefined ? undefined : createHash('sha256').update(secretKey).digest();
  return {
    seal(secret) {
      if (!key) return `plain:${secret}`;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return `v1:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
    },
    open(stored) {
      if (stored.startsWith('plain:')) return stored.slice('plain:'.length);
      if (!stored.startsWith('v1:')) throw new Error('unknown secret encoding');
      if (!key) throw new Error('an endpoint secret is encrypted but HOOKPOST_SECRET_KEY is not set');
      const raw = Buffer.from(stored.slice(3), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}
