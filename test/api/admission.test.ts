/**
 * What a caller can make hookpost do to third parties is bounded the same way whichever route it
 * takes: a test event passes the key's rate limit and the backlog bound like an enqueue; a key
 * limited below one item a second may still send one; a tenant-bound key may only make its
 * endpoints' retry policy gentler than the operator's; a tenant has at most so many endpoints
 * and so many bulk replays or resends running at once. And every `since`/`until` a route takes is
 * one PostgreSQL can hold (year 0000 or a +16:00 offset was a 500).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

describe('admission of everything that sends', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db, { HOOKPOST_MAX_ENDPOINTS_PER_TENANT: '2' });
  });
  after(() => db.drop());

  it("a test event spends the key's rate like an enqueue", async () => {
    const endpoint = await createEndpoint(t, 'http://127.0.0.1:9/hook', { tenant_id: 'rated' });
    const key = await keySender(t, {
      scopes: ['endpoints:write'],
      tenant_id: 'rated',
      rate_limit_per_second: 1,
    });
    assert.equal((await key.send('POST', `/v1/endpoints/${endpoint.id}/test-event`)).status, 202);
    const second = await key.send('POST', `/v1/endpoints/${endpoint.id}/test-event`);
    assert.equal(second.status, 429);
    assert.equal((await second.json()).error.code, 'rate_limited');
    assert.ok(Number(second.headers.get('retry-after')) >= 1);
  });

  it('a test event is refused while the backlog is full', async () => {
    const small = await createTestApp(db, { HOOKPOST_BACKLOG_LIMIT: '1' });
    const endpoint = await createEndpoint(small, 'http://127.0.0.1:9/hook', { tenant_id: 'backlogged' });
    const item = { endpoint_id: endpoint.id, event_type: 'x', payload: {} };
    assert.equal(
      (await small.send('POST', '/v1/deliveries/batch', { items: [item, item, item] })).status,
      202,
    );
    // The backlog is counted at most once a second: wait until the count sees the three.
    const refused = await waitFor('the backlog guard to refuse a test event', async () => {
      const res = await small.send('POST', `/v1/endpoints/${endpoint.id}/test-event`);
      return res.status === 503 ? res : undefined;
    });
    assert.equal((await refused!.json()).error.code, 'backlog_full');
    assert.equal(refused!.headers.get('retry-after'), '5');
  });

  it('a key limited below one item a second still sends one, then waits', async () => {
    const endpoint = await createEndpoint(t, 'http://127.0.0.1:9/hook', { tenant_id: 'slow' });
    const key = await keySender(t, {
      scopes: ['deliveries:write'],
      tenant_id: 'slow',
      rate_limit_per_second: 0.5,
    });
    const item = { endpoint_id: endpoint.id, event_type: 'x', payload: {} };
    assert.equal((await key.send('POST', '/v1/deliveries', item)).status, 202);
    const second = await key.send('POST', '/v1/deliveries', item);
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '2', 'one token at 0.5 a second');
    const batch = await key.send('POST', '/v1/deliveries/batch', { items: [item, item] });
    assert.equal(batch.status, 400);
    assert.equal((await batch.json()).error.code, 'batch_over_rate_limit');
  });

  it("a tenant-bound key may only make the retry policy gentler than the operator's", async () => {
    const key = await keySender(t, { scopes: ['endpoints:write', 'endpoints:read'], tenant_id: 'gentle' });
    const global = t.config.policies.retry;
    const create = (extra: Record<string, unknown>) =>
      key.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/hook', ...extra });
    for (const [field, value] of [
      ['max_attempts', global.maxAttempts + 1],
      ['retry_base_seconds', global.baseSeconds / 2],
      ['retry_cap_seconds', global.capSeconds / 2],
    ] as const) {
      const res = await create({ [field]: value });
      assert.equal(res.status, 400, field);
      const error = (await res.json()).error;
      assert.equal(error.code, 'validation_failed');
      assert.equal(error.details[0].field, field);
      assert.match(error.message, /the operator's HOOKPOST_/);
    }
    const gentle = await create({
      max_attempts: 2,
      retry_base_seconds: global.baseSeconds * 2,
      retry_cap_seconds: global.capSeconds * 2,
    });
    assert.equal(gentle.status, 201);
    const id = (await gentle.json()).id;
    const patched = await key.send('PATCH', `/v1/endpoints/${id}`, { max_attempts: global.maxAttempts + 5 });
    assert.equal(patched.status, 400);
    assert.equal((await (await key.send('GET', `/v1/endpoints/${id}`)).json()).max_attempts, 2, 'unchanged');
    // The operator's own keys are not bound by it.
    const harsh = await t.send('PATCH', `/v1/endpoints/${id}`, { max_attempts: global.maxAttempts + 5 });
    assert.equal(harsh.status, 200);
  });

  it('a tenant has at most HOOKPOST_MAX_ENDPOINTS_PER_TENANT live endpoints', async () => {
    const first = await createEndpoint(t, 'http://127.0.0.1:9/a', { tenant_id: 'capped' });
    await createEndpoint(t, 'http://127.0.0.1:9/b', { tenant_id: 'capped' });
    const third = await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/c', tenant_id: 'capped' });
    assert.equal(third.status, 409);
    const error = (await third.json()).error;
    assert.equal(error.code, 'too_many_endpoints');
    assert.deepEqual(error.details, { limit: 2 });
    const [count] = await db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM endpoints WHERE tenant_id = 'capped'`;
    assert.equal(count!.n, 2, 'nothing half written');
    // Another tenant is not affected, and a deleted endpoint frees its place.
    await createEndpoint(t, 'http://127.0.0.1:9/c', { tenant_id: 'uncapped' });
    assert.equal((await t.send('DELETE', `/v1/endpoints/${first.id}`)).status, 204);
    await createEndpoint(t, 'http://127.0.0.1:9/c', { tenant_id: 'capped' });
  });

  it('since and until that PostgreSQL cannot hold are a 400 on every route that takes a time', async () => {
    for (const query of ['since=0000-01-01T00:00:00Z', 'until=2026-01-01T00:00:00%2B16:00']) {
      const res = await t.send('GET', `/v1/deliveries?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal((await res.json()).error.code, 'validation_failed');
    }
    const key = await t.send('POST', '/v1/api-keys', {
      name: 'far offset',
      scopes: ['deliveries:read'],
      expires_at: '2099-01-01T00:00:00+16:00',
    });
    assert.equal(key.status, 400);
    assert.match((await key.json()).error.message, /expires_at: has a zone offset beyond ±15:59/);
  });
});

describe('bulk replays and resends one tenant may run at once', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    // One delivery per batch, one every 5 s: a run stays `running` for the length of the test.
    t = await createTestApp(db, {
      HOOKPOST_MAX_REPLAYS_PER_TENANT: '1',
      HOOKPOST_REPLAY_BATCH_SIZE: '1',
      HOOKPOST_REPLAY_RATE_PER_SECOND: '0.2',
    });
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    receiver = await startReceiver((req, res) => res.writeHead(req.url === '/fail' ? 500 : 200).end());
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  const deliverTo = async (tenant: string, path: string, maxAttempts?: number) => {
    const endpoint = await createEndpoint(t, receiver.url.replace('/hook', path), {
      tenant_id: tenant,
      ...(maxAttempts === undefined ? {} : { max_attempts: maxAttempts }),
    });
    const item = { endpoint_id: endpoint.id, event_type: 'x', payload: {} };
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items: [item, item, item] })).status, 202);
    const final = maxAttempts === undefined ? 'delivered' : 'dead_letter';
    await waitFor(`three deliveries ${final}`, async () => {
      const [row] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${endpoint.id} AND status = ${final}`;
      return row!.n === 3;
    });
    return endpoint.id;
  };

  it('a second run of the same tenant is 429 until the first ends or goes stale; other tenants run', async () => {
    const since = '2000-01-01T00:00:00Z';
    const delivered = await deliverTo('busy', '/ok');
    const dead = await deliverTo('busy', '/fail', 1);
    const first = await t.send('POST', `/v1/endpoints/${delivered}/resend`, { since });
    assert.equal(first.status, 202);
    assert.equal((await first.json()).state, 'running');

    const resend = await t.send('POST', `/v1/endpoints/${delivered}/resend`, { since });
    assert.equal(resend.status, 429);
    assert.equal(resend.headers.get('retry-after'), '30');
    assert.equal((await resend.json()).error.code, 'too_many_replays');
    const replay = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: dead, tenant_id: 'busy' });
    assert.equal(replay.status, 429);
    assert.match((await replay.json()).error.message, /HOOKPOST_MAX_REPLAYS_PER_TENANT/);
    // A dry run starts nothing and is never refused.
    const dry = await t.send('POST', `/v1/endpoints/${delivered}/resend`, { since, dry_run: true });
    assert.equal(dry.status, 200);

    // Another tenant has its own place.
    const elsewhere = await deliverTo('quiet', '/ok');
    assert.equal((await t.send('POST', `/v1/endpoints/${elsewhere}/resend`, { since })).status, 202);

    // A run whose process died stops counting once it has not moved for a while.
    await db.sql`UPDATE replay_audit SET updated_at = now() - interval '1 hour'
                 WHERE tenant_id = 'busy' AND state = 'running'`;
    const after_ = await t.send('POST', '/v1/dead-letters/replay', { endpoint_id: dead, tenant_id: 'busy' });
    assert.equal(after_.status, 202);
  });
});
