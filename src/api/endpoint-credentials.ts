/**
 * The request schemas of an endpoint's `auth`, `tls` and `legacy_signature` (the rules behind
 * them: endpoints/credentials.ts). A secret field accepts the masked value a read showed, which
 * keeps the stored secret; every other value must be sendable as it is.
 */
import { z } from 'zod';
import { isMaskedHeaderValue } from '../endpoints/headers.js';
import { headerNameProblem, headerValueSchema, RESERVED_HEADERS } from './validation.js';

/** Headers a legacy signature may not use: hookpost sets them itself. */
const LEGACY_RESERVED: ReadonlySet<string> = new Set([...RESERVED_HEADERS, 'hookpost-sequence']);

/** A secret: 1-4096 characters, or the masked value a read showed. */
function secretSchema(max = 4096) {
  return z.string().min(1).max(max);
}

/** A header name a legacy signature is sent in. */
const legacyHeaderName = z
  .string()
  .superRefine((name, ctx) => {
    const problem = headerNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
    else if (LEGACY_RESERVED.has(name.toLowerCase())) {
      ctx.addIssue({ code: 'custom', message: 'is set by hookpost and cannot be used' });
    }
  })
  .meta({ description: 'the header the partner reads, like X-Signature' });

export const basicAuthSchema = z
  .strictObject({
    type: z.literal('basic'),
    username: headerValueSchema(undefined, 256)
      .min(1)
      .refine((u) => !u.includes(':'), { message: 'must not contain ":" (RFC 7617)' }),
    password: headerValueSchema(isMaskedHeaderValue, 1024)
      .min(1)
      .meta({ description: 'masked on reads; send the masked value back to keep it' }),
  })
  .meta({ id: 'BasicAuth' });

export const oauth2ClientCredentialsSchema = z
  .strictObject({
    type: z.literal('oauth2_client_credentials'),
    token_url: z.string().max(2048).meta({ description: "the partner's token endpoint (http or https)" }),
    client_id: z.string().min(1).max(1024),
    client_secret: secretSchema().meta({
      description: 'masked on reads; send the masked value back to keep it',
    }),
    scope: z.string().max(1024).optional().meta({ description: 'space-separated scopes to ask for' }),
    audience: z.string().max(1024).optional().meta({ description: 'sent as the audience parameter' }),
  })
  .meta({ id: 'OAuth2ClientCredentials' });

export const authSchema = z
  .discriminatedUnion('type', [basicAuthSchema, oauth2ClientCredentialsSchema])
  .meta({ description: 'how hookpost authenticates to the partner; PATCH null removes it' });

export const legacySignatureSchema = z
  .strictObject({
    header: legacyHeaderName,
    secret: secretSchema().meta({
      description: 'HMAC-SHA256 key (its UTF-8 bytes); masked on reads, the masked value keeps it',
    }),
    encoding: z.enum(['hex', 'base64']),
    prefix: headerValueSchema(undefined, 64)
      .optional()
      .meta({ description: 'put before the digest, like sha256=' }),
    content: z
      .enum(['body', 'timestamp.body'])
      .meta({ description: 'what is signed: the body, or `<unix seconds>.<body>`' }),
    timestamp_header: legacyHeaderName.optional().meta({
      description: 'also send the signed timestamp (unix seconds) in this header',
    }),
  })
  .meta({ id: 'LegacySignature' });

/** PEM text; the content is checked by the store (endpoints/tls-material.ts), naming the field. */
function pem(description: string, max = 64 * 1024) {
  return z.string().max(max).nullable().optional().meta({ description });
}

export const tlsSchema = z
  .strictObject({
    ca_certificates: pem("the partner's CA certificates (PEM); when set, only these are trusted"),
    client_certificate: pem('the client certificate (PEM, chain allowed) presented to the partner'),
    client_key: pem('its unencrypted private key (PEM); never shown, the masked value keeps it', 16 * 1024),
  })
  .meta({
    id: 'EndpointTls',
    description: 'merged field by field: a PEM sets one, null removes it, an absent one stays',
  });

const certificateInfo = z.object({
  subject: z.string(),
  issuer: z.string(),
  fingerprint_sha256: z.string(),
  not_before: z.string().meta({ format: 'date-time' }),
  not_after: z.string().meta({ format: 'date-time' }),
});

/** How reads show `tls`: certificates described, the key masked. */
export const tlsViewSchema = z
  .object({
    ca_certificates: z.array(certificateInfo).nullable(),
    client_certificate: certificateInfo.nullable(),
    client_key: z.string().nullable().meta({ description: 'masked' }),
  })
  .meta({ id: 'EndpointTlsView' });

export const credentialFields = {
  auth: authSchema.nullable(),
  tls: tlsSchema.nullable(),
  legacy_signature: legacySignatureSchema.nullable(),
};
