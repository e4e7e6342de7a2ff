/**
 * OAuth2 client-credentials tokens (RFC 6749 §4.4) for endpoints with
 * `auth.type = oauth2_client_credentials`. A token is fetched through the dispatcher's own Sender
 * — the same connection pools, DNS check against private addresses and egress proxy as a
 * delivery — and kept until shortly before `expires_in`:
 * - in this process, shared by every attempt to the endpoint;
 * - in `endpoint_oauth_tokens` (sealed like every credential), so the other dispatchers and the
 *   next start use it instead of asking for one each. Why: docs/architecture.md.
 * Concurrent needs for a token of one endpoint wait for one request. After a `401` the attempt
 * runner calls renew() with the token that was refused: it is dropped (here and in the table,
 * only if nobody replaced it meanwhile) and one new one is fetched.
 */
import { createHash } from 'node:crypto';
import type { Sql } from '../db/connect.js';
import type { SecretBox } from '../endpoints/secrets.js';
import { PROXY_UNAVAILABLE } from './egress-proxy.js';
import type { OAuthClient } from './partner-credentials.js';
import type { Sender } from './sender.js';

/** The error class of an attempt whose token could not be had. */
export const AUTH_FAILED = 'auth_failed';
/** Used when a token response has no `expires_in` (RFC 6749 only recommends it). */
const DEFAULT_LIFETIME_SECONDS = 300;
/** A token is renewed this early: a tenth of its lifetime, at most a minute. */
const MAX_EARLY_SECONDS = 60;
/** Token responses larger than this are refused. */
const MAX_TOKEN_RESPONSE_BYTES = 16 * 1024;

export type TokenResult =
  | { token: string; error?: undefined }
  /** `proxyUnavailable`: the egress proxy, not the token endpoint, failed. */
  | { token?: undefined; error: string; proxyUnavailable?: boolean };

interface Held {
  token: string;
  /** ms since epoch after which it is not used any more. */
  renewAt: number;
}

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** RFC 6749 §2.3.1: the client id and secret form-urlencoded, then Basic. */
function clientAuthorization(client: OAuthClient): string {
  const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(client.clientId)}:${encode(client.clientSecret)}`).toString('base64')}`;
}

/** A short reason from a token endpoint's answer, without anything the client sent. */
function refusal(status: number, body: string, client: OAuthClient): string {
  let reason = `HTTP ${status}`;
  try {
    const parsed = JSON.parse(body) as { error?: unknown; error_description?: unknown };
    if (typeof parsed.error === 'string') {
      reason = parsed.error.slice(0, 64);
      if (typeof parsed.error_description === 'string')
        reason += ` (${parsed.error_description.slice(0, 200)})`;
    }
  } catch {}
  // A server that echoes the request must not put the secret into the attempt log.
  return `token endpoint refused: ${reason.replaceAll(client.clientSecret, '…')}`;
}

export class TokenCache {
  private readonly held = new Map<string, Held>();
  private readonly pending = new Map<string, Promise<TokenResult>>();
  /** clientHash per client: an OAuthClient is built once per endpoint version, so once each. */
  private readonly hashes = new WeakMap<OAuthClient, string>();
  /** Token requests sent (for tests and the bench). */
  requests = 0;

  constructor(
    private readonly sender: Sender,
    private readonly sql: Sql,
    private readonly box: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Names a client configuration: a changed secret, scope or token URL is another token. Keyed
   * (SecretBox.digest), since it is stored beside the token and covers the client secret.
   */
  private clientHash(client: OAuthClient): string {
    let hash = this.hashes.get(client);
    if (hash === undefined) {
      const { tokenUrl, clientId, clientSecret, scope, audience } = client;
      hash = this.box
        .digest([tokenUrl, clientId, clientSecret, scope ?? '', audience ?? ''].join('\0'))
        .slice(0, 32);
      this.hashes.set(client, hash);
    }
    return hash;
  }

  /** A token for the endpoint: held, stored by another process, or fetched (once for all waiting). */
  token(endpointId: string, client: OAuthClient): TokenResult | Promise<TokenResult> {
    const key = `${endpointId}\0${this.clientHash(client)}`;
    const held = this.held.get(key);
    if (held && held.renewAt > this.now()) return { token: held.token };
    return this.once(key, () => this.storedOrFetched(endpointId, client, key));
  }

  /** After a `401` with `refused`: drops it (unless already replaced) and gets a new one. */
  renew(endpointId: string, client: OAuthClient, refused: string): Promise<TokenResult> {
    const key = `${endpointId}\0${this.clientHash(client)}`;
    const held = this.held.get(key);
    if (held && held.token !== refused && held.renewAt > this.now())
      return Promise.resolve({ token: held.token });
    if (held?.token === refused) this.held.delete(key);
    return this.once(key, async () => {
      await this.sql`
        DELETE FROM endpoint_oauth_tokens WHERE endpoint_id = ${endpointId} AND token_hash = ${tokenHash(refused)}`;
      return this.storedOrFetched(endpointId, client, key);
    });
  }

  private once(key: string, run: () => Promise<TokenResult>): Promise<TokenResult> {
    let promise = this.pending.get(key);
    if (!promise) {
      promise = run()
        .catch((): TokenResult => ({ error: 'token cache unavailable' }))
        .finally(() => this.pending.delete(key));
      this.pending.set(key, promise);
    }
    return promise;
  }

  private async storedOrFetched(endpointId: string, client: OAuthClient, key: string): Promise<TokenResult> {
    const hash = this.clientHash(client);
    const stored = await this.readStored(endpointId, hash);
    if (stored) {
      this.held.set(key, stored);
      return { token: stored.token };
    }
    const fetched = await this.fetch(client);
    if (fetched.error !== undefined) return fetched;
    this.held.set(key, fetched.held);
    if (this.held.size > 10_000) this.held.clear();
    await this.store(endpointId, hash, fetched.held);
    return { token: fetched.held.token };
  }

  private async readStored(endpointId: string, hash: string): Promise<Held | undefined> {
    const [row] = await this.sql<{ access_token: string; renew_at: Date }[]>`
      SELECT access_token, renew_at FROM endpoint_oauth_tokens
      WHERE endpoint_id = ${endpointId} AND client_hash = ${hash} AND renew_at > now()`;
    if (!row) return undefined;
    try {
      return { token: this.box.open(row.access_token), renewAt: row.renew_at.getTime() };
    } catch {
      return undefined; // sealed under a key no longer configured: fetch a new one
    }
  }

  private async store(endpointId: string, hash: string, held: Held): Promise<void> {
    await this.sql`
      INSERT INTO endpoint_oauth_tokens (endpoint_id, client_hash, access_token, token_hash, renew_at)
      VALUES (${endpointId}, ${hash}, ${this.box.seal(held.token)}, ${tokenHash(held.token)}, ${new Date(held.renewAt)})
      ON CONFLICT (endpoint_id) DO UPDATE SET client_hash = excluded.client_hash,
        access_token = excluded.access_token, token_hash = excluded.token_hash, renew_at = excluded.renew_at`;
  }

  private async fetch(
    client: OAuthClient,
  ): Promise<{ held: Held; error?: undefined } | { error: string; proxyUnavailable?: boolean }> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (client.scope) form.set('scope', client.scope);
    if (client.audience) form.set('audience', client.audience);
    this.requests++;
    const result = await this.sender.send({
      url: client.tokenUrl,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: clientAuthorization(client),
      },
      body: Buffer.from(form.toString()),
      keepBytes: MAX_TOKEN_RESPONSE_BYTES,
    });
    const { outcome } = result;
    if (outcome.kind !== 'success') {
      if (outcome.statusCode) return { error: refusal(outcome.statusCode, result.snippet ?? '', client) };
      if (outcome.errorClass === PROXY_UNAVAILABLE)
        return { error: result.error ?? PROXY_UNAVAILABLE, proxyUnavailable: true };
      return { error: `token endpoint unreachable: ${result.error ?? outcome.errorClass}` };
    }
    let parsed: { access_token?: unknown; token_type?: unknown; expires_in?: unknown };
    try {
      parsed = JSON.parse(result.snippet ?? '');
    } catch {
      return { error: 'token endpoint answered something that is not JSON' };
    }
    if (typeof parsed.access_token !== 'string' || parsed.access_token === '') {
      return { error: 'token endpoint answered without an access_token' };
    }
    if (typeof parsed.token_type !== 'string' || parsed.token_type.toLowerCase() !== 'bearer') {
      return { error: 'token endpoint answered a token_type other than Bearer' };
    }
    const lifetime =
      typeof parsed.expires_in === 'number' && parsed.expires_in > 0
        ? parsed.expires_in
        : DEFAULT_LIFETIME_SECONDS;
    const early = Math.min(MAX_EARLY_SECONDS, lifetime / 10);
    return { held: { token: parsed.access_token, renewAt: this.now() + (lifetime - early) * 1000 } };
  }
}
