/**
 * PEM material of an endpoint's `tls`: checks before it is stored (each certificate parses, the
 * key is an unencrypted private key that belongs to the certificate), what reads show of a
 * certificate (subject, issuer, SHA-256 fingerprint, validity), and when a client certificate
 * runs out. Parsed with node:crypto's X509Certificate: no dependency, the same parser TLS uses.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';

/** As stored: certificates in PEM (not secret), the client key sealed. */
export interface StoredTls {
  ca_certificates?: string;
  client_certificate?: string;
  client_key?: string;
}

/** A PATCH of `tls`: a PEM sets a field, null removes it, absent keeps it. */
export interface TlsPatch {
  ca_certificates?: string | null | undefined;
  client_certificate?: string | null | undefined;
  client_key?: string | null | undefined;
}

export interface CertificateInfo {
  subject: string;
  issuer: string;
  fingerprint_sha256: string;
  not_before: string;
  not_after: string;
}

/** How far ahead a client certificate's end is announced (health, operational event). */
export const EXPIRY_WARNING_DAYS = 14;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
/** At most this many certificates in one field (a CA bundle). */
const MAX_CERTIFICATES = 32;

/** Each certificate of a PEM bundle, in order. */
export function pemBlocks(pem: string): string[] {
  return pem.match(PEM_CERTIFICATE) ?? [];
}

/** Why `pem` cannot be used as a certificate (or bundle), or undefined when it can. */
export function certificateProblem(pem: string, bundle: boolean): string | undefined {
  const blocks = pemBlocks(pem);
  if (blocks.length === 0) return 'must be a PEM certificate (-----BEGIN CERTIFICATE-----)';
  if (blocks.length > MAX_CERTIFICATES) return `at most ${MAX_CERTIFICATES} certificates`;
  for (const [i, block] of blocks.entries()) {
    try {
      const cert = new X509Certificate(block);
      if (bundle && !cert.ca)
        return `certificate ${i + 1} is not a CA certificate (basicConstraints CA:FALSE)`;
    } catch {
      return `certificate ${i + 1} cannot be parsed`;
    }
  }
  return undefined;
}

/**
 * Why `keyPem` cannot be the private key of `certificatePem` (the first certificate of the chain),
 * or undefined. An encrypted key is refused: hookpost would have to store its passphrase beside it.
 */
export function keyProblem(certificatePem: string, keyPem: string): string | undefined {
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (/ENCRYPTED/.test(keyPem) || code === 'ERR_MISSING_PASSPHRASE') {
      return 'is encrypted: send the key without a passphrase (it is sealed at rest)';
    }
    return 'must be a PEM private key (-----BEGIN PRIVATE KEY-----)';
  }
  const cert = new X509Certificate(pemBlocks(certificatePem)[0]!);
  return cert.checkPrivateKey(key) ? undefined : 'does not belong to tls.client_certificate';
}

/** What reads show of each certificate of a bundle. */
export function describeCertificates(pem: string): CertificateInfo[] {
  return pemBlocks(pem).map((block) => {
    const cert = new X509Certificate(block);
    return {
      subject: cert.subject.replaceAll('\n', ', '),
      issuer: cert.issuer.replaceAll('\n', ', '),
      fingerprint_sha256: cert.fingerprint256,
      not_before: new Date(cert.validFrom).toISOString(),
      not_after: new Date(cert.validTo).toISOString(),
    };
  });
}

/** When the client certificate (the first of its chain) stops being valid. */
export function clientCertificateExpiry(tls: StoredTls | null): Date | undefined {
  if (!tls?.client_certificate) return undefined;
  const [first] = pemBlocks(tls.client_certificate);
  return first ? new Date(new X509Certificate(first).validTo) : undefined;
}

/** True when `expiresAt` is within the warning window of `now` (or already past). */
export function isExpiring(expiresAt: Date | undefined, now: number): boolean {
  return expiresAt !== undefined && expiresAt.getTime() - now <= EXPIRY_WARNING_DAYS * 86_400_000;
}

/** A short name for a TLS configuration: endpoints with the same one share a connection pool. */
export function tlsConfigKey(tls: StoredTls): string {
  return createHash('sha256')
    .update(`${tls.ca_certificates ?? ''}\0${tls.client_certificate ?? ''}\0${tls.client_key ?? ''}`)
    .digest('hex')
    .slice(0, 32);
}
