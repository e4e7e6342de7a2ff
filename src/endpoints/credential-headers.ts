/**
 * Rules between an endpoint's credentials and the rest of its sending configuration, checked on
 * the result of a create or PATCH (what would be sent), not on each field alone: `auth` owns the
 * Authorization header, a legacy signature's headers may not collide with custom headers, and
 * `tls` needs an https URL.
 */
import { CredentialsError, type StoredCredentials } from './credentials.js';

/** Throws CredentialsError (a 400) when the combination cannot be sent as configured. */
export function checkCredentialHeaders(
  url: string,
  headers: Record<string, string>,
  credentials: StoredCredentials,
): void {
  const custom = new Map(Object.keys(headers).map((name) => [name.toLowerCase(), name]));
  if (credentials.auth && custom.has('authorization')) {
    throw new CredentialsError(
      `headers.${custom.get('authorization')}`,
      'cannot be set together with auth, which sends the Authorization header',
    );
  }
  const legacy = credentials.legacy_signature;
  if (legacy) {
    for (const field of ['header', 'timestamp_header'] as const) {
      const name = legacy[field]?.toLowerCase();
      if (name === undefined) continue;
      if (custom.has(name)) {
        throw new CredentialsError(
          `legacy_signature.${field}`,
          `is also a custom header (${custom.get(name)})`,
        );
      }
      if (name === 'authorization' && credentials.auth) {
        throw new CredentialsError(
          `legacy_signature.${field}`,
          'is the Authorization header that auth sends',
        );
      }
    }
    if (legacy.timestamp_header?.toLowerCase() === legacy.header.toLowerCase()) {
      throw new CredentialsError(
        'legacy_signature.timestamp_header',
        'must differ from legacy_signature.header',
      );
    }
  }
  if (credentials.tls && new URL(url).protocol !== 'https:') {
    throw new CredentialsError('tls', 'applies to https URLs only');
  }
}
