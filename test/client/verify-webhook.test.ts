/**
 * verifyWebhook() against hookpost's own signer (src/dispatch/signing.ts, what the dispatcher
 * sends), with `v1` cross-checked against the official `standardwebhooks` verifier on the same
 * requests: both accept the genuine ones and both refuse every tampered one. Real deliveries
 * from a running hookpost are verified in package.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from '../../clients/typescript/src/verify.js';
import { signatureHeader, signingKey } from '../../src/dispatch/signing.js';
import { generateSecret, generateSigningKeyPair } from '../../src/endpoints/secrets.js';

interface Signed {
  headers: Record<string, string>;
  body: Buffer;
}

function sign(secrets: string[], body: Buffer | string, timestamp = Math.floor(Date.now() / 1000)): Signed {
  const bytes = Buffer.from(body);
  const id = `msg_${randomBytes(16).toString('hex')}`;
  return {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets.map(signingKey), id, timestamp, bytes),
    },
    body: bytes,
  };
}

async function refusal(options: Parameters<typeof verifyWebhook>[0]): Promise<WebhookVerificationReason> {
  try {
    await verifyWebhook(options);
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return error.reason;
  }
  assert.fail('verifyWebhook accepted it');
}

function officialAccepts(secret: string, request: Signed): boolean {
  try {
    new Webhook(secret).verify(request.body, request.headers);
    return true;
  } catch {
    return false;
  }
}

async function oursAccepts(key: string, request: Signed): Promise<boolean> {
  try {
    await verifyWebhook({ headers: request.headers, body: request.body, key });
    return true;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError);
    return false;
  }
}

/** A genuine request and ways of tampering with it, each of which must be refused. */
function tamperings(request: Signed, otherSecret: string): [string, Signed][] {
  const flipped = Buffer.from(request.body);
  flipped[flipped.length - 1]! ^= 1;
  const h = request.headers;
  const sig = h['webhook-signature']!;
  return [
    ['a changed body', { headers: h, body: flipped }],
    [
      'a body with a trailing newline',
      { headers: h, body: Buffer.concat([request.body, Buffer.from('\n')]) },
    ],
    ['another webhook-id', { headers: { ...h, 'webhook-id': `${h['webhook-id']}x` }, body: request.body }],
    [
      'a timestamp moved by a second',
      {
        headers: { ...h, 'webhook-timestamp': String(Number(h['webhook-timestamp']) - 1) },
        body: request.body,
      },
    ],
    ['a signature from another secret', sign([otherSecret], request.body)],
    [
      'a truncated signature',
      { headers: { ...h, 'webhook-signature': sig.slice(0, -4) }, body: request.body },
    ],
    [
      "the other scheme's label on the signature",
      {
        headers: {
          ...h,
          'webhook-signature': sig.startsWith('v1a,') ? `v1,${sig.slice(4)}` : `v1a,${sig.slice(3)}`,
        },
        body: request.body,
      },
    ],
  ];
}

describe('verifyWebhook: v1 (HMAC-SHA256, whsec_)', () => {
  it('accepts what hookpost signs and refuses every tampering, exactly as standardwebhooks does', async () => {
    const bodies = [
      '{"order":1}',
      JSON.stringify({ text: 'ünïcödé ✓ \u2028', nested: { list: [1, 2, 3] } }),
      JSON.stringify({ big: 'x'.repeat(100_000) }),
      '[]',
    ];
    for (const body of bodies) {
      const secret = generateSecret();
      const request = sign([secret], body);
      assert.equal(officialAccepts(secret, request), true, 'standardwebhooks accepts');
      assert.deepEqual(
        await verifyWebhook({ headers: request.headers, body: request.body, key: secret }),
        JSON.parse(body),
      );
      for (const [what, forged] of tamperings(request, generateSecret())) {
        assert.equal(officialAccepts(secret, forged), false, `standardwebhooks refuses ${what}`);
        assert.equal(await oursAccepts(secret, forged), false, `verifyWebhook refuses ${what}`);
      }
    }
  });

  it('during a rotation: either secret verifies the two signatures hookpost sends', async () => {
    const [old, current] = [generateSecret(), generateSecret()];
    const request = sign([current, old], '{"rotated":true}');
    assert.match(request.headers['webhook-signature']!, /^v1,\S+ v1,\S+$/);
    for (const key of [old, current]) {
      assert.equal(officialAccepts(key, request), true);
      assert.deepEqual(await verifyWebhook({ headers: request.headers, body: request.body, key }), {
        rotated: true,
      });
    }
    // A receiver holding both keys while it updates its configuration.
    const onlyOld = sign([old], '{"a":1}');
    assert.deepEqual(await verifyWebhook({ ...onlyOld, key: [current, old] }), { a: 1 });
    assert.equal(await refusal({ ...onlyOld, key: [current] }), 'no_matching_signature');
  });

  it('refuses stale and future timestamps beyond the tolerance (300 s by default), as standardwebhooks does', async () => {
    const secret = generateSecret();
    const now = Math.floor(Date.now() / 1000);
    const old = sign([secret], '{}', now - 301);
    const future = sign([secret], '{}', now + 301);
    assert.equal(officialAccepts(secret, old), false);
    assert.equal(officialAccepts(secret, future), false);
    assert.equal(await refusal({ ...old, key: secret }), 'timestamp_too_old');
    assert.equal(await refusal({ ...future, key: secret }), 'timestamp_too_new');
    const nearlyOld = sign([secret], '{}', now - 290);
    assert.equal(officialAccepts(secret, nearlyOld), true);
    assert.deepEqual(await verifyWebhook({ ...nearlyOld, key: secret }), {});
    // A tolerance of its own, and an injected clock.
    assert.equal(await refusal({ ...nearlyOld, key: secret, toleranceSeconds: 60 }), 'timestamp_too_old');
    assert.deepEqual(await verifyWebhook({ ...old, key: secret, now: new Date((now - 301) * 1000) }), {});
    const malformed = { ...old, headers: { ...old.headers, 'webhook-timestamp': '17e8' } };
    assert.equal(await refusal({ ...malformed, key: secret }), 'invalid_timestamp');
  });
});

describe('verifyWebhook: v1a (Ed25519, whpk_)', () => {
  it('accepts what hookpost signs with the private key and refuses tampering', async () => {
    const { privateKey, publicKey } = generateSigningKeyPair();
    const request = sign([privateKey], '{"scheme":"v1a"}');
    assert.match(request.headers['webhook-signature']!, /^v1a,/);
    assert.deepEqual(await verifyWebhook({ ...request, key: publicKey }), { scheme: 'v1a' });
    const other = generateSigningKeyPair();
    for (const [what, forged] of tamperings(request, generateSecret())) {
      assert.equal(await oursAccepts(publicKey, forged), false, `refuses ${what}`);
    }
    assert.equal(await refusal({ ...request, key: other.publicKey }), 'no_matching_signature');
  });

  it('during a rotation: the old and the new public key both verify', async () => {
    const [old, current] = [generateSigningKeyPair(), generateSigningKeyPair()];
    const request = sign([current.privateKey, old.privateKey], '{"n":2}');
    for (const key of [old.publicKey, current.publicKey]) {
      assert.deepEqual(await verifyWebhook({ ...request, key }), { n: 2 });
    }
  });

  it('says when the key and the signature scheme do not go together', async () => {
    const { privateKey, publicKey } = generateSigningKeyPair();
    const v1a = sign([privateKey], '{}');
    const v1 = sign([generateSecret()], '{}');
    const error = await verifyWebhook({ ...v1a, key: generateSecret() }).catch(
      (e: WebhookVerificationError) => e,
    );
    assert.ok(error instanceof WebhookVerificationError);
    assert.equal(error.reason, 'no_matching_signature');
    assert.match(error.message, /no v1 signature/);
    assert.equal(await refusal({ ...v1, key: publicKey }), 'no_matching_signature');
    const leaked = await verifyWebhook({ ...v1a, key: privateKey }).catch((e: WebhookVerificationError) => e);
    assert.ok(leaked instanceof WebhookVerificationError);
    assert.equal(leaked.reason, 'invalid_key');
    assert.ok(!leaked.message.includes(privateKey.slice(5)), 'the message does not quote the key');
  });
});

describe('verifyWebhook: inputs', () => {
  const secret = generateSecret();

  it('reads Headers objects and plain records in any case, with string, Uint8Array or Buffer bodies', async () => {
    const request = sign([secret], '{"ok":true}');
    const upper = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toUpperCase(), v]));
    const arrays = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, [v]]));
    for (const headers of [new Headers(request.headers), request.headers, upper, arrays]) {
      for (const body of [request.body.toString(), new Uint8Array(request.body), request.body]) {
        assert.deepEqual(await verifyWebhook({ headers, body, key: secret }), { ok: true });
      }
    }
  });

  it('refuses missing headers, a bad key and a signed body that is not JSON, without quoting them', async () => {
    const request = sign([secret], '{"a":1}');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const { [name]: _, ...rest } = request.headers;
      assert.equal(await refusal({ headers: rest, body: request.body, key: secret }), 'missing_headers');
    }
    for (const key of ['secret', 'whsec_', 'whsec_!!!', 'whpk_AAAA', []]) {
      assert.equal(await refusal({ ...request, key }), 'invalid_key');
    }
    const notJson = sign([secret], 'not json: card 4242');
    const error = await verifyWebhook({ ...notJson, key: secret }).catch((e: WebhookVerificationError) => e);
    assert.ok(error instanceof WebhookVerificationError);
    assert.equal(error.reason, 'invalid_payload');
    assert.ok(!error.message.includes('4242') && !error.message.includes(secret.slice(6)));
  });
});
