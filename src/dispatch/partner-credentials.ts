/**
 * An endpoint's opened credentials in the form each attempt uses them, prepared once when the
 * endpoint is loaded into the dispatcher's cache (endpoint-cache.ts), not per attempt: the Basic
 * header already encoded, the legacy signature's key as bytes, the TLS material with the name of
 * its connection pool, the OAuth2 client for the token cache.
 */
import { createHmac } from 'node:crypto';
import type { LegacySignature, StoredCredentials } from '../endpoints/credentials.js';
import { type StoredTls, tlsConfigKey } from '../endpoints/tls-material.js';

export interface OAuthClient {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string | undefined;
  audience: string | undefined;
}

/** PEM material for one connection pool; `key` names the pool (same material, same pool). */
export interface TlsMaterial {
  key: string;
  ca?: string | undefined;
  cert?: string | undefined;
  privateKey?: string | undefined;
}

export interface LegacySigner {
  header: string;
  key: Buffer;
  encoding: 'hex' | 'base64';
  prefix: string;
  withTimestamp: boolean;
  timestampHeader: string | undefined;
}

export interface SendingCredentials {
  /** `Authorization: Basic …`, encoded once. */
  basic: string | undefined;
  oauth: OAuthClient | undefined;
  legacy: LegacySigner | undefined;
  tls: TlsMaterial | undefined;
}

function legacySigner(legacy: LegacySignature): LegacySigner {
  return {
    header: legacy.header.toLowerCase(),
    key: Buffer.from(legacy.secret, 'utf8'),
    encoding: legacy.encoding,
    prefix: legacy.prefix ?? '',
    withTimestamp: legacy.content === 'timestamp.body',
    timestampHeader: legacy.timestamp_header?.toLowerCase(),
  };
}

function tlsMaterial(tls: StoredTls): TlsMaterial {
  return {
    key: tlsConfigKey(tls),
    ca: tls.ca_certificates,
    cert: tls.client_certificate,
    privateKey: tls.client_key,
  };
}

/** From opened credentials (endpoints/credentials.ts openCredentials); undefined when there are none. */
export function sendingCredentials(opened: StoredCredentials): SendingCredentials | undefined {
  const { auth, tls, legacy_signature: legacy } = opened;
  if (!auth && !tls && !legacy) return undefined;
  return {
    basic:
      auth?.type === 'basic'
        ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`, 'latin1').toString('base64')}`
        : undefined,
    oauth:
      auth?.type === 'oauth2_client_credentials'
        ? {
            tokenUrl: auth.token_url,
            clientId: auth.client_id,
            clientSecret: auth.client_secret,
            scope: auth.scope,
            audience: auth.audience,
          }
        : undefined,
    legacy: legacy ? legacySigner(legacy) : undefined,
    tls: tls ? tlsMaterial(tls) : undefined,
  };
}

/** Adds the legacy signature (and its timestamp header) to an attempt's headers. */
export function addLegacySignature(
  headers: Record<string, string>,
  signer: LegacySigner,
  timestamp: number,
  body: Buffer,
): void {
  const hmac = createHmac('sha256', signer.key);
  if (signer.withTimestamp) hmac.update(`${timestamp}.`);
  headers[signer.header] = signer.prefix + hmac.update(body).digest(signer.encoding);
  if (signer.timestampHeader) headers[signer.timestampHeader] = String(timestamp);
}
