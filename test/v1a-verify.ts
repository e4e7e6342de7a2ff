/** Standard Webhooks v1a verification with node:crypto, as a partner with a whpk_ key would do it. */
import { createPublicKey, verify } from 'node:crypto';

/** For each signature in webhook-signature, whether it is a v1a signature `publicKey` verifies. */
export function verifyV1aWithNode(
  publicKey: string,
  headers: Record<string, string>,
  body: Buffer,
): boolean[] {
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice(5), 'base64').toString('base64url') },
    format: 'jwk',
  });
  const content = Buffer.concat([
    Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`),
    body,
  ]);
  return headers['webhook-signature']!.split(' ').map((s) => {
    const [version, signature] = s.split(',');
    return version === 'v1a' && verify(null, content, key, Buffer.from(signature!, 'base64'));
  });
}
