import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Provider from 'oidc-provider';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const KEY = 'oauth-test-key-0123456789abcdef';
const CLIENT_SECRET = 'client-secret-SECRET-4711';

interface AuthServer {
  tokenUrl: string;
  provider: Provider;
  /** Token requests the server received. */
  tokenRequests: number;
  /** Lifetime of the next tokens, seconds. */
  ttlSeconds: number;
  close(): Promise<void>;
}

/** A real OAuth2 authorization server (oidc-provider) on loopback, client credentials only. */
async function startAuthServer(): Promise<AuthServer> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const state = { tokenRequests: 0, ttlSeconds: 3600 };
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [
      {
        client_id: 'hookpost',
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'orders:write',
      },
    ],
    scopes: ['orders:write'],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    ttl: { ClientCredentials: () => state.ttlSeconds },
  });
  provider.use(async (ctx, next) => {
    if (ctx.path === '/token') state.tokenRequests++;
    await next();
  });
  server.on('request', provider.callback());
  return Object.assign(state, {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    provider,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

describe('auth: OAuth2 client credentials against a real authorization server (oidc-provider)', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let auth: AuthServer;
  /** Accepts a request only with a bearer token the authorization server knows and that has not expired. */
  let partner: Receiver;
  const accepted: string[] = [];
  const refused: string[] = [];
  const closers: (() => Promise<void>)[] = [];

  const oauth = (extra: Record<string, unknown> = {}) => ({
    type: 'oauth2_client_credentials',
    token_url: auth.tokenUrl,
    client_id: 'hookpost',
    client_secret: CLIENT_SECRET,
    scope: 'orders:write',
    ...extra,
  });

  before(async () => {
    auth = await startAuthServer();
    closers.push(auth.close);
    partner = await startReceiver((req, res) => {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      auth.provider.ClientCredentials.find(token).then((found) => {
        const valid = found && !found.isExpired && found.scope === 'orders:write';
        (valid ? accepted : refused).push(token);
        res.writeHead(valid ? 200 : 401).end();
      });
    });
    closers.push(partner.close);
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_SECRET_KEY: KEY });
    dispatcher = await startTestDispatcher(db, { HOOKPOST_SECRET_KEY: KEY });
  });
  after(async () => {
    await dispatcher.stop();
    for (const close of closers) await close();
    await db.drop();
  });

  async function enqueue(endpointId: string, count = 1): Promise<string[]> {
    const items = Array.from({ length: count }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 'x',
      payload: { i },
    }));
    const res = await t.send('POST', '/v1/deliveries/batch', { items });
    assert.equal(res.status, 202);
    return (await res.json()).results.flatMap((r: { deliveries: { id: string }[] }) =>
      r.deliveries.map((d) => d.id),
    );
  }

  async function settled(id: string) {
    return waitFor(`delivery ${id} to settle`, async () => {
      const d = await (await t.send('GET', `/v1/deliveries/${id}`)).json();
      return ['delivered', 'dead_letter'].includes(d.status) ? d : undefined;
    });
  }

  it('shows the client secret masked and checks the token URL like a delivery URL', async () => {
    const ep = await createEndpoint(t, partner, { auth: oauth() });
    const read = await (await t.send('GET', `/v1/endpoints/${ep.id}`)).json();
    assert.equal(read.auth.client_secret, '••••••4711');
    assert.equal(read.auth.token_url, auth.tokenUrl);
    const [row] = await db.sql`SELECT auth FROM endpoints WHERE id = ${ep.id}`;
    assert.match(row!.auth.client_secret, /^v2:/);
    const strict = await createTestApp(db, {
      HOOKPOST_SECRET_KEY: KEY,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'false',
    });
    const res = await strict.send('POST', '/v1/endpoints', {
      url: 'https://partner.example/hook',
      auth: oauth(),
    });
    assert.equal(res.status, 400);
    assert.match(
      (await res.json()).error.message,
      /^auth\.token_url: points at a private or loopback address/,
    );
  });

  it('fetches one token for many concurrent attempts and keeps using it, in this process and the next', async () => {
    const ep = await createEndpoint(t, partner, { auth: oauth() });
    const before = auth.tokenRequests;
    const ids = await enqueue(ep.id, 20);
    for (const id of ids) assert.equal((await settled(id)).status, 'delivered');
    assert.equal(auth.tokenRequests - before, 1, 'concurrent needs collapse into one token request');
    assert.equal(new Set(accepted.slice(-20)).size, 1, 'every attempt used the same token');
    const [stored] =
      await db.sql`SELECT access_token FROM endpoint_oauth_tokens WHERE endpoint_id = ${ep.id}`;
    assert.match(stored!.access_token, /^v2:/, 'the token is sealed at rest');
    assert.ok(!stored!.access_token.includes(accepted.at(-1)!));

    // A new dispatcher process (a restart, or another replica) uses the stored token.
    await dispatcher.stop();
    dispatcher = await startTestDispatcher(db, { HOOKPOST_SECRET_KEY: KEY });
    const [next] = await enqueue(ep.id);
    assert.equal((await settled(next!)).status, 'delivered');
    assert.equal(auth.tokenRequests - before, 1, 'no new token for the next process');
  });

  it('renews a token the partner refuses (401) once, within the same attempt', async () => {
    const ep = await createEndpoint(t, partner, { auth: oauth() });
    const [first] = await enqueue(ep.id);
    await settled(first!);
    const token = accepted.at(-1)!;
    // The authorization server revokes it: the partner now answers 401 for it.
    await (await auth.provider.ClientCredentials.find(token))!.destroy();
    const before = auth.tokenRequests;
    const [second] = await enqueue(ep.id);
    const delivery = await settled(second!);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.attempts.length, 1, 'the renewal does not cost an attempt');
    assert.equal(auth.tokenRequests - before, 1);
    assert.equal(refused.at(-1), token);
    assert.notEqual(accepted.at(-1), token);
  });

  it('renews a token shortly before it expires instead of sending an expired one', async () => {
    auth.ttlSeconds = 2;
    try {
      const ep = await createEndpoint(t, partner, { auth: oauth() });
      const before = auth.tokenRequests;
      const refusedBefore = refused.length;
      const [first] = await enqueue(ep.id);
      assert.equal((await settled(first!)).status, 'delivered');
      await new Promise((resolve) => setTimeout(resolve, 2100)); // the token's lifetime passes
      const [second] = await enqueue(ep.id);
      assert.equal((await settled(second!)).status, 'delivered');
      assert.equal(auth.tokenRequests - before, 2, 'a new token for the second delivery');
      assert.equal(refused.length, refusedBefore, 'the expired token was never sent');
    } finally {
      auth.ttlSeconds = 3600;
    }
  });

  it('a refusing token endpoint is auth_failed with its reason, retried, and the secret appears nowhere', async () => {
    const ep = await createEndpoint(t, partner, {
      auth: oauth({ client_secret: 'wrong-secret-NOT-THIS-ONE' }),
      max_attempts: 2,
    });
    const received = partner.requests.length;
    const [id] = await enqueue(ep.id);
    const delivery = await settled(id!);
    assert.equal(delivery.status, 'dead_letter');
    assert.equal(delivery.attempts.length, 2, 'retried like a transient failure');
    for (const attempt of delivery.attempts) {
      assert.equal(attempt.error_class, 'auth_failed');
      assert.match(attempt.error, /^auth_failed: token endpoint refused: invalid_client/);
      assert.ok(!attempt.error.includes('NOT-THIS-ONE'));
    }
    assert.equal(partner.requests.length, received, 'nothing was sent to the partner');
  });

  it('a token endpoint that is down is auth_failed: unreachable', async () => {
    const down = http.createServer();
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const { port } = down.address() as AddressInfo;
    await new Promise((resolve) => down.close(resolve));
    const ep = await createEndpoint(t, partner, {
      auth: oauth({ token_url: `http://127.0.0.1:${port}/token` }),
      max_attempts: 1,
    });
    const [id] = await enqueue(ep.id);
    const delivery = await settled(id!);
    assert.equal(delivery.attempts[0].error_class, 'auth_failed');
    assert.match(delivery.attempts[0].error, /^auth_failed: token endpoint unreachable: connection_refused/);
  });
});
