/**
 * An endpoint's credentials besides its signing keys — `auth` (Basic, OAuth2 client
 * credentials), `tls` (a private CA, a client certificate and key) and `legacy_signature` — at
 * rest, in the API and for sending. One module owns the rules for all three:
 * - secret fields are sealed one by one like header values (endpoints/headers.ts); the rest of
 *   each object is readable;
 * - reads show the secret fields masked (the same mask as header values), never the value;
 * - a write that sends a masked value back keeps the stored one;
 * - repointing the endpoint at another origin drops every stored credential that the same
 *   request does not supply again (`dropForNewOrigin`), so a changed URL never carries a secret
 *   meant for the old host.
 */
import { isMaskedHeaderValue, MASK_PREFIX, maskValue } from './headers.js';
import type { SecretBox } from './secrets.js';
import {
  type CertificateInfo,
  certificateProblem,
  describeCertificates,
  keyProblem,
  type StoredTls,
  type TlsPatch,
} from './tls-material.js';

export type { StoredTls, TlsPatch } from './tls-material.js';

export interface BasicAuth {
  type: 'basic';
  username: string;
  password: string;
}

export interface OAuth2ClientCredentials {
  type: 'oauth2_client_credentials';
  token_url: string;
  client_id: string;
  client_secret: string;
  scope?: string | undefined;
  audience?: string | undefined;
}

/** As stored (secret sealed), as written (secret plain or masked) and as read (masked). */
export type Auth = BasicAuth | OAuth2ClientCredentials;

export interface LegacySignature {
  header: string;
  secret: string;
  encoding: 'hex' | 'base64';
  prefix?: string | undefined;
  content: 'body' | 'timestamp.body';
  timestamp_header?: string | undefined;
}

/** What an endpoint row holds (NULL columns as null). */
export interface StoredCredentials {
  auth: Auth | null;
  tls: StoredTls | null;
  legacy_signature: LegacySignature | null;
}

/** What create or PATCH asks for: undefined keeps, null clears. */
export interface CredentialsPatch {
  auth?: Auth | null | undefined;
  tls?: TlsPatch | null | undefined;
  legacy_signature?: LegacySignature | null | undefined;
}

/** A credential that cannot be stored; the message names the field, never a value. */
export class CredentialsError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

export const NO_CREDENTIALS: StoredCredentials = { auth: null, tls: null, legacy_signature: null };

/** The secret field of an auth object. */
function authSecretField(auth: Auth): 'password' | 'client_secret' {
  return auth.type === 'basic' ? 'password' : 'client_secret';
}

function authSecret(auth: Auth): string {
  return auth.type === 'basic' ? auth.password : auth.client_secret;
}

function withAuthSecret(auth: Auth, secret: string): Auth {
  return auth.type === 'basic' ? { ...auth, password: secret } : { ...auth, client_secret: secret };
}

/**
 * Seals `value`, or keeps `stored` when `value` is the masked form a read showed. A masked value
 * with nothing stored (a new credential, or one dropped with the old origin) is refused.
 */
function sealOrKeep(box: SecretBox, field: string, value: string, stored: string | undefined): string {
  if (!isMaskedHeaderValue(value)) return box.seal(value);
  if (stored === undefined) throw new CredentialsError(field, 'is a masked value: send the real value');
  return stored;
}

/** `auth` replaces the stored object; its secret may be the masked value when the type is the same. */
function patchAuth(box: SecretBox, stored: Auth | null, patch: Auth | null | undefined): Auth | null {
  if (patch === undefined) return stored;
  if (patch === null) return null;
  const field = authSecretField(patch);
  const kept = stored?.type === patch.type ? authSecret(stored) : undefined;
  return withAuthSecret(patch, sealOrKeep(box, `auth.${field}`, authSecret(patch), kept));
}

function patchLegacy(
  box: SecretBox,
  stored: LegacySignature | null,
  patch: LegacySignature | null | undefined,
): LegacySignature | null {
  if (patch === undefined) return stored;
  if (patch === null) return null;
  return { ...patch, secret: sealOrKeep(box, 'legacy_signature.secret', patch.secret, stored?.secret) };
}

/**
 * `tls` merges field by field (a certificate can be replaced and the CA kept): a PEM sets a
 * field, null removes it, an absent field stays; the masked `client_key` keeps the stored key.
 * The certificate and key must belong together.
 */
function patchTls(
  box: SecretBox,
  stored: StoredTls | null,
  patch: TlsPatch | null | undefined,
): StoredTls | null {
  if (patch === undefined) return stored;
  if (patch === null) return null;
  const next: StoredTls = { ...stored };
  for (const field of ['ca_certificates', 'client_certificate'] as const) {
    const value = patch[field];
    if (value === null) delete next[field];
    else if (value !== undefined) {
      const problem = certificateProblem(value, field === 'ca_certificates');
      if (problem) throw new CredentialsError(`tls.${field}`, problem);
      next[field] = value.trim();
    }
  }
  if (patch.client_key === null) delete next.client_key;
  else if (patch.client_key !== undefined) {
    next.client_key = sealOrKeep(box, 'tls.client_key', patch.client_key, stored?.client_key);
  }
  if ((next.client_certificate === undefined) !== (next.client_key === undefined)) {
    const missing = next.client_key === undefined ? 'client_key' : 'client_certificate';
    throw new CredentialsError(
      `tls.${missing}`,
      'is required with tls.client_certificate and tls.client_key together',
    );
  }
  if (next.client_certificate && next.client_key && (patch.client_key || patch.client_certificate)) {
    const problem = keyProblem(next.client_certificate, box.open(next.client_key));
    if (problem) throw new CredentialsError('tls.client_key', problem);
  }
  return Object.keys(next).length === 0 ? null : next;
}

/** Applies a create or PATCH to the stored credentials; throws CredentialsError (a 400). */
export function applyCredentialsPatch(
  box: SecretBox,
  stored: StoredCredentials,
  patch: CredentialsPatch,
): StoredCredentials {
  return {
    auth: patchAuth(box, stored.auth, patch.auth),
    tls: patchTls(box, stored.tls, patch.tls),
    legacy_signature: patchLegacy(box, stored.legacy_signature, patch.legacy_signature),
  };
}

/** True when `next` is on another origin (scheme, host or port) than `current`. */
export function isOriginChange(current: string, next: string | undefined): boolean {
  return next !== undefined && new URL(next).origin !== new URL(current).origin;
}

/**
 * What is kept when the URL moves to another origin: nothing secret. Header values, `auth`, the
 * legacy signature and the client certificate and key go (the request may supply them again); a
 * private CA is not a secret and stays. Returns the kept credentials and the names of what went,
 * for the audit entry.
 */
export function dropForNewOrigin(
  stored: StoredCredentials,
  headers: Record<string, string>,
): { credentials: StoredCredentials; headers: Record<string, string>; dropped: string[] } {
  const dropped: string[] = [];
  if (Object.keys(headers).length > 0) dropped.push('headers');
  if (stored.auth) dropped.push('auth');
  if (stored.legacy_signature) dropped.push('legacy_signature');
  let tls = stored.tls;
  if (tls?.client_key || tls?.client_certificate) {
    dropped.push('tls.client_certificate', 'tls.client_key');
    tls = tls.ca_certificates ? { ca_certificates: tls.ca_certificates } : null;
  }
  return { credentials: { auth: null, tls, legacy_signature: null }, headers: {}, dropped };
}

/** Of what a move to another origin dropped, what the same request did not set again (for the audit). */
export function notSuppliedAgain(
  dropped: string[],
  headers: Record<string, string | null> | null | undefined,
  patch: CredentialsPatch | undefined,
): string[] {
  return dropped.filter((name) => {
    if (name === 'headers') return !headers || Object.values(headers).every((v) => v === null);
    if (name === 'auth') return !patch?.auth;
    if (name === 'legacy_signature') return !patch?.legacy_signature;
    return !patch?.tls?.[name.slice('tls.'.length) as 'client_certificate' | 'client_key'];
  });
}

/** The masked form of a sealed value; one no configured key opens shows as the bare mask. */
function masked(box: SecretBox, sealed: string): string {
  try {
    return maskValue(box.open(sealed));
  } catch {
    return MASK_PREFIX;
  }
}

/** How reads show `tls`: each certificate described, the key only masked. */
export interface TlsView {
  ca_certificates: CertificateInfo[] | null;
  client_certificate: CertificateInfo | null;
  client_key: string | null;
}

export interface CredentialsView {
  auth: Auth | null;
  tls: TlsView | null;
  legacy_signature: LegacySignature | null;
}

/** What GET and list show: secret fields masked, certificates described. */
export function viewCredentials(box: SecretBox, stored: StoredCredentials): CredentialsView {
  const { auth, tls, legacy_signature: legacy } = stored;
  return {
    auth: auth && withAuthSecret(auth, masked(box, authSecret(auth))),
    tls: tls && {
      ca_certificates: tls.ca_certificates ? describeCertificates(tls.ca_certificates) : null,
      client_certificate: tls.client_certificate ? describeCertificates(tls.client_certificate)[0]! : null,
      client_key: tls.client_key ? masked(box, tls.client_key) : null,
    },
    legacy_signature: legacy && { ...legacy, secret: masked(box, legacy.secret) },
  };
}

/** Credentials opened for sending; throws SecretUnavailableError when one cannot be opened. */
export function openCredentials(box: SecretBox, stored: StoredCredentials): StoredCredentials {
  const { auth, tls, legacy_signature: legacy } = stored;
  return {
    auth: auth && withAuthSecret(auth, box.open(authSecret(auth))),
    tls: tls && { ...tls, ...(tls.client_key && { client_key: box.open(tls.client_key) }) },
    legacy_signature: legacy && { ...legacy, secret: box.open(legacy.secret) },
  };
}

/**
 * The sealed values of one row with `transform` applied (the re-encryption pass): returns the
 * new credentials and how many values changed.
 */
export function mapSealed(
  stored: StoredCredentials,
  transform: (sealed: string) => string | undefined,
): { credentials: StoredCredentials; changed: number } {
  let changed = 0;
  const apply = (sealed: string) => {
    const next = transform(sealed);
    if (next === undefined || next === sealed) return sealed;
    changed++;
    return next;
  };
  const { auth, tls, legacy_signature: legacy } = stored;
  const credentials = {
    auth: auth && withAuthSecret(auth, apply(authSecret(auth))),
    tls: tls && { ...tls, ...(tls.client_key && { client_key: apply(tls.client_key) }) },
    legacy_signature: legacy && { ...legacy, secret: apply(legacy.secret) },
  };
  return { credentials, changed };
}
