/**
 * verifyWebhook(): what a receiver runs on each request hookpost sends (Standard Webhooks).
 * `v1` is HMAC-SHA256 with the endpoint's `whsec_` secret, `v1a` is Ed25519 with its `whpk_`
 * public key, both over "{webhook-id}.{webhook-timestamp}.{body}". Only WebCrypto
 * (`globalThis.crypto.subtle`) is used, so it runs unchanged in Node 20+, browsers, Deno, Bun and
 * edge runtimes.
 */

/** Why a request was refused; stable, branch on it. */
export type WebhookVerificationReason =
  /** webhook-id, webhook-timestamp or webhook-signature is absent or empty. */
  | 'missing_headers'
  /** webhook-timestamp is not whole unix seconds. */
  | 'invalid_timestamp'
  /** Signed longer ago than the tolerance: possibly a replayed request. */
  | 'timestamp_too_old'
  /** Signed further in the future than the tolerance: a clock is wrong. */
  | 'timestamp_too_new'
  /** The key is not a `whsec_…` secret or a `whpk_…` public key. */
  | 'invalid_key'
  /** No signature in webhook-signature was made with this key (wrong key, or a changed body). */
  | 'no_matching_signature'
  /** The signature holds but the body is not JSON. */
  | 'invalid_payload';

/** A request that is not a genuine, fresh hookpost delivery. The message never quotes the body or key. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** A Fetch `Headers`, or a plain record such as Node's `req.headers` (names in any case). */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookOptions {
  headers: WebhookHeaders;
  /** The raw body, exactly as received: verify before parsing, never a re-serialized object. */
  body: string | Uint8Array;
  /**
   * The endpoint's `whsec_…` secret (v1) or `whpk_…` public key (v1a). Several keys are
   * accepted, e.g. the old and the new secret while a rotation reaches your configuration.
   */
  key: string | readonly string[];
  /** How far webhook-timestamp may be from now, either way. Default 300 s, as Standard Webhooks. */
  toleranceSeconds?: number;
  /** The current time; for tests. */
  now?: Date;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return typeof value === 'string' ? value : value?.join(' ');
}

/** Standard base64 to bytes; null when it is not base64. */
function fromBase64(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}

/** Equal bytes, in time that depends on the length only (which is public: 32 for HMAC-SHA256). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

type ParsedKey =
  | { scheme: 'v1'; bytes: Uint8Array<ArrayBuffer> }
  | { scheme: 'v1a'; bytes: Uint8Array<ArrayBuffer> };

function parseKey(key: string): ParsedKey {
  if (key.startsWith('whsec_')) {
    const bytes = fromBase64(key.slice(6));
    if (bytes && bytes.length > 0) return { scheme: 'v1', bytes };
  } else if (key.startsWith('whpk_')) {
    const bytes = fromBase64(key.slice(5));
    if (bytes?.length === 32) return { scheme: 'v1a', bytes };
  } else if (key.startsWith('whsk_')) {
    throw new WebhookVerificationError(
      'invalid_key',
      "whsk_ is a private key, which hookpost keeps; verify with the endpoint's whpk_ public key",
    );
  }
  throw new WebhookVerificationError(
    'invalid_key',
    'the key must be an endpoint secret (whsec_ and base64) or public key (whpk_ and 32 bytes of base64)',
  );
}

/** The signatures of one scheme in webhook-signature ("v1,<b64> v1a,<b64> …"), decoded. */
function signaturesFor(headerValue: string, scheme: 'v1' | 'v1a'): Uint8Array<ArrayBuffer>[] {
  const out: Uint8Array<ArrayBuffer>[] = [];
  for (const part of headerValue.split(/\s+/)) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== scheme) continue;
    const bytes = fromBase64(part.slice(comma + 1));
    if (bytes) out.push(bytes);
  }
  return out;
}

async function matches(
  key: ParsedKey,
  signatures: Uint8Array<ArrayBuffer>[],
  content: Uint8Array<ArrayBuffer>,
) {
  const subtle = globalThis.crypto.subtle;
  if (key.scheme === 'v1') {
    const hmacKey = await subtle.importKey('raw', key.bytes, { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    const expected = new Uint8Array(await subtle.sign('HMAC', hmacKey, content));
    // Every signature is compared, matched or not, so the time taken says nothing about which.
    let found = false;
    for (const signature of signatures) found = constantTimeEqual(expected, signature) || found;
    return found;
  }
  const publicKey = await subtle.importKey('raw', key.bytes, { name: 'Ed25519' }, false, ['verify']);
  for (const signature of signatures) {
    if (
      signature.length === 64 &&
      (await subtle.verify({ name: 'Ed25519' }, publicKey, signature, content))
    ) {
      return true;
    }
  }
  return false;
}

/**
 * Checks a delivery's Standard Webhooks signature and timestamp and returns its parsed JSON
 * payload. Throws a WebhookVerificationError (with a `reason`) when the request is not a
 * genuine delivery signed with `key` within `toleranceSeconds` of now.
 */
export async function verifyWebhook<T = unknown>(options: VerifyWebhookOptions): Promise<T> {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  const signature = header(options.headers, 'webhook-signature');
  if (!id || !timestamp || !signature) {
    throw new WebhookVerificationError(
      'missing_headers',
      'webhook-id, webhook-timestamp and webhook-signature are required',
    );
  }
  if (!/^\d{1,15}$/.test(timestamp.trim())) {
    throw new WebhookVerificationError('invalid_timestamp', 'webhook-timestamp must be unix seconds');
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const age = now - Number(timestamp);
  if (age > tolerance) {
    throw new WebhookVerificationError('timestamp_too_old', `signed ${age} s ago, more than ${tolerance} s`);
  }
  if (-age > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_too_new',
      `signed ${-age} s in the future, more than ${tolerance} s`,
    );
  }

  const keys = (typeof options.key === 'string' ? [options.key] : options.key).map(parseKey);
  if (keys.length === 0) throw new WebhookVerificationError('invalid_key', 'no key given');
  const body = typeof options.body === 'string' ? encoder.encode(options.body) : options.body;
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + body.length);
  content.set(prefix);
  content.set(body, prefix.length);

  let seenScheme = false;
  for (const key of keys) {
    const signatures = signaturesFor(signature, key.scheme);
    seenScheme ||= signatures.length > 0;
    if (await matches(key, signatures, content)) return parse<T>(options.body);
  }
  const schemes = [...new Set(keys.map((k) => k.scheme))].join(' or ');
  throw new WebhookVerificationError(
    'no_matching_signature',
    seenScheme
      ? 'no signature matches the key (another key, or a body changed on the way)'
      : `no ${schemes} signature in webhook-signature (is the endpoint's signature_scheme the key's?)`,
  );
}

function parse<T>(body: string | Uint8Array): T {
  try {
    const text = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body);
    return JSON.parse(text) as T;
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'the signed body is not JSON');
  }
}
