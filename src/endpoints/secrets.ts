/**
 * Endpoint secrets: generation (Standard Webhooks `whsec_` HMAC secrets, `whsk_`/`whpk_` Ed25519
 * key pairs) and encryption at rest with AES-256-GCM under HOOKPOST_SECRET_KEY. Signing secrets,
 * Ed25519 private keys and custom header values all go through the same SecretBox.
 *
 * Stored forms (the prefix says how a value was sealed, so keys can be added and rotated later):
 * - `plain:<value>` — no key was configured (local dev); production refuses to start without one.
 * - `v1:<base64 iv|tag|ciphertext>` — sealed before key ids existed; opened by trying every key.
 * - `v2:<key id>:<base64 iv|tag|ciphertext>` — the key id names the key that sealed it, so a
 *   value whose key is gone fails as "key <id> missing" instead of a bare authentication error.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
export const PRIVATE_KEY_PREFIX = 'whsk_';
export const PUBLIC_KEY_PREFIX = 'whpk_';

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

/**
 * A fresh Ed25519 key pair in Standard Webhooks form: `whsk_` + base64 of the 32-byte private
 * seed, `whpk_` + base64 of the 32-byte raw public key (what partners verify with).
 */
export function generateSigningKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return {
    privateKey: PRIVATE_KEY_PREFIX + seed.toString('base64'),
    publicKey: PUBLIC_KEY_PREFIX + raw.toString('base64'),
  };
}

/** A stored value that no configured key can open. Carries no secret material, only the key id. */
export class SecretUnavailableError extends Error {
  constructor(readonly keyId: string | null) {
    super(
      keyId
        ? `sealed under key ${keyId}, which is neither HOOKPOST_SECRET_KEY nor in HOOKPOST_SECRET_KEY_PREVIOUS`
        : 'sealed value cannot be opened with HOOKPOST_SECRET_KEY or HOOKPOST_SECRET_KEY_PREVIOUS',
    );
    this.name = 'SecretUnavailableError';
  }
}

export interface SecretBox {
  /** The id of the key new values are sealed under; null when they are stored in plain text. */
  readonly currentKeyId: string | null;
  seal(value: string): string;
  /** Throws SecretUnavailableError when no configured key opens it. */
  open(stored: string): string;
  /** False when the value should be sealed again under the current key (older key, plain text). */
  isCurrent(stored: string): boolean;
  /**
   * A keyed digest naming a value that holds a secret (HMAC-SHA256 under the current key, hex), so
   * a stored name cannot be used to guess the secret offline; plain SHA-256 when no key is set.
   */
  digest(value: string): string;
}

interface Key {
  id: string;
  bytes: Buffer;
}

/** A short public name for a key: a domain-separated hash, so logs and rows can say which key. */
export function keyId(secretKey: string): string {
  return createHash('sha256').update('hookpost secret key id\0').update(secretKey).digest('hex').slice(0, 12);
}

function toKey(secretKey: string): Key {
  return { id: keyId(secretKey), bytes: createHash('sha256').update(secretKey).digest() };
}

function decrypt(key: Buffer, raw: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * Builds the at-rest codec: seals under `secretKey`, opens with it or any of `previousKeys`
 * (HOOKPOST_SECRET_KEY_PREVIOUS), so the key can be rotated without losing a secret.
 */
export function createSecretBox(secretKey: string | undefined, previousKeys: string[] = []): SecretBox {
  const current = secretKey === undefined ? undefined : toKey(secretKey);
  const keys = [...(current ? [current] : []), ...previousKeys.map(toKey)];
  const byId = new Map(keys.map((k) => [k.id, k]));
  return {
    currentKeyId: current?.id ?? null,
    seal(value) {
      if (!current) return `plain:${value}`;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current.bytes, iv);
      const sealed = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
      return `v2:${current.id}:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
    },
    open(stored) {
      if (stored.startsWith('plain:')) return stored.slice('plain:'.length);
      if (stored.startsWith('v2:')) {
        const end = stored.indexOf(':', 3);
        const id = stored.slice(3, end);
        const key = byId.get(id);
        if (end < 0 || !key) throw new SecretUnavailableError(end < 0 ? null : id);
        try {
          return decrypt(key.bytes, Buffer.from(stored.slice(end + 1), 'base64'));
        } catch {
          throw new SecretUnavailableError(id);
        }
      }
      if (stored.startsWith('v1:')) {
        // No key id was stored: the GCM tag tells which key (if any) sealed it.
        const raw = Buffer.from(stored.slice(3), 'base64');
        for (const key of keys) {
          try {
            return decrypt(key.bytes, raw);
          } catch {}
        }
      }
      throw new SecretUnavailableError(null);
    },
    isCurrent(stored) {
      return current ? stored.startsWith(`v2:${current.id}:`) : stored.startsWith('plain:');
    },
    digest(value) {
      const mac = current ? createHmac('sha256', current.bytes) : createHash('sha256');
      return mac.update('hookpost digest\0').update(value).digest('hex');
    },
  };
}
