/**
 * The isolation matrix: for EVERY /v1 route, a key bound to tenant A pointed at tenant B's
 * resources answers 404 or an empty list and changes nothing of B's, and the same route for A's
 * own resources works. The matrix is checked against the app's routes, so a new route without an
 * entry here fails this test.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BUCKET_COUNT, bucketIndex, refreshHealthPercentiles } from '../../src/endpoints/latency.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type TestDatabase,
} from '../helpers.js';

type Send = Awaited<ReturnType<typeof keySender>>['send'];

/** Another tenant's resources, which the key under test must not see or change. */
interface Other {
  tenant: string;
  endpoint: string;
  delivery: string;
  dead: string;
  replay: string;
}

interface Fixture {
  sql: TestDatabase['sql'];
  queuedA: () => Promise<number>;
  /** The message a delivery belongs to. */
  messageOf: (deliveryId: string) => Promise<string>;
  a: { endpoint: string; spare: string; delivery: string; dead: string; kept: string; replay: string };
  b: Other;
  /** The reserved tenant `hookpost`: for every key but an admin one it does not exist. */
  ops: Other;
}

/** What a route does for a tenant-bound key (and, for the reserved tenant, any non-admin key). */
type Case =
  | {
      kind: 'scoped';
      cross: (s: Send, f: Fixture, o: Other) => Promise<void>;
      own: (s: Send, f: Fixture) => Promise<void>;
    }
  | { kind: 'shared'; own: (s: Send, f: Fixture) => Promise<void> }
  | { kind: 'admin_only' };

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by assertions
const status = async (res: Promise<Response> | Response, expected: number, what: string): Promise<any> => {
  const r = await res;
  assert.equal(r.status, expected, `${what}: ${r.status} ${r.status >= 300 ? await r.clone().text() : ''}`);
  return r.status === 204 ? null : r.json();
};
const ids = (body: { data: { id?: string; endpoint_id?: string }[] }) =>
  body.data.map((d) => d.id ?? d.endpoint_id);

const MATRIX: Record<string, Case> = {
  'POST /v1/endpoints': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      await status(
        s('POST', '/v1/endpoints', { tenant_id: o.tenant, url: 'http://127.0.0.1:9/x' }),
        404,
        'create in B',
      );
    },
    own: async (s) => {
      const body = await status(s('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/own' }), 201, 'create');
      assert.equal(body.tenant_id, 'tenant_a');
    },
  },
  'GET /v1/endpoints': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      assert.deepEqual(ids(await status(s('GET', `/v1/endpoints?tenant_id=${o.tenant}`), 200, 'list B')), []);
      assert.ok(!ids(await status(s('GET', '/v1/endpoints'), 200, 'list')).includes(o.endpoint));
    },
    own: async (s, f) => {
      assert.ok(ids(await status(s('GET', '/v1/endpoints'), 200, 'list')).includes(f.a.endpoint));
    },
  },
  'GET /v1/endpoints/slow': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      assert.ok(
        !ids(await status(s('GET', '/v1/endpoints/slow?p95_ms=10'), 200, 'slow')).includes(o.endpoint),
      );
    },
    own: async (s, f) => {
      assert.ok(
        ids(await status(s('GET', '/v1/endpoints/slow?p95_ms=10'), 200, 'slow')).includes(f.a.endpoint),
      );
    },
  },
  'GET /v1/endpoints/:id/health': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('GET', `/v1/endpoints/${o.endpoint}/health`), 404, 'health B')),
    own: async (s, f) => void (await status(s('GET', `/v1/endpoints/${f.a.endpoint}/health`), 200, 'health')),
  },
  'GET /v1/endpoints/:id/latency': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('GET', `/v1/endpoints/${o.endpoint}/latency`), 404, 'latency B')),
    own: async (s, f) =>
      void (await status(s('GET', `/v1/endpoints/${f.a.endpoint}/latency`), 200, 'latency')),
  },
  'POST /v1/endpoints/:id/test-event': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('POST', `/v1/endpoints/${o.endpoint}/test-event`), 404, 'test event B')),
    own: async (s, f) => {
      const body = await status(s('POST', `/v1/endpoints/${f.a.endpoint}/test-event`), 202, 'test event');
      assert.equal(body.deliveries[0].endpoint_id, f.a.endpoint);
    },
  },
  'GET /v1/endpoints/:id': {
    kind: 'scoped',
    cross: async (s, _f, o) => void (await status(s('GET', `/v1/endpoints/${o.endpoint}`), 404, 'get B')),
    own: async (s, f) => void (await status(s('GET', `/v1/endpoints/${f.a.endpoint}`), 200, 'get')),
  },
  'PATCH /v1/endpoints/:id': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('PATCH', `/v1/endpoints/${o.endpoint}`, { description: 'x' }), 404, 'patch B')),
    own: async (s, f) =>
      void (await status(s('PATCH', `/v1/endpoints/${f.a.endpoint}`, { description: 'x' }), 200, 'patch')),
  },
  'DELETE /v1/endpoints/:id': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('DELETE', `/v1/endpoints/${o.endpoint}`), 404, 'delete B')),
    own: async (s, f) => void (await status(s('DELETE', `/v1/endpoints/${f.a.spare}`), 204, 'delete')),
  },
  'POST /v1/endpoints/:id/rotate-secret': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('POST', `/v1/endpoints/${o.endpoint}/rotate-secret`), 404, 'rotate B')),
    own: async (s, f) =>
      void (await status(s('POST', `/v1/endpoints/${f.a.endpoint}/rotate-secret`), 200, 'rotate')),
  },
  'POST /v1/endpoints/:id/close-circuit': {
    kind: 'scoped',
    cross: async (s, f, o) => {
      // B's circuit open: A's key cannot see it, let alone close it.
      await f.sql`UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 3600
                  WHERE endpoint_id = ${o.endpoint}`;
      await status(s('POST', `/v1/endpoints/${o.endpoint}/close-circuit`), 404, 'close B');
      const [h] = await f.sql`SELECT state FROM endpoint_health WHERE endpoint_id = ${o.endpoint}`;
      assert.equal(h?.state, 'open');
      await f.sql`UPDATE endpoint_health SET state = 'closed', opened_at = NULL, cooldown_seconds = NULL
                  WHERE endpoint_id = ${o.endpoint}`;
    },
    own: async (s, f) => {
      await f.sql`UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 3600
                  WHERE endpoint_id = ${f.a.endpoint}`;
      const body = await status(s('POST', `/v1/endpoints/${f.a.endpoint}/close-circuit`), 200, 'close');
      assert.equal(body.previous_state, 'open');
    },
  },
  'POST /v1/endpoints/:id/resend': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const since = '1970-01-01T00:00:00Z';
      await status(s('POST', `/v1/endpoints/${o.endpoint}/resend`, { since }), 404, 'resend B');
      await status(s('POST', `/v1/endpoints/${o.endpoint}/resend`, { since, dry_run: true }), 404, 'B dry');
    },
    own: async (s, f) => {
      const body = await status(
        s('POST', `/v1/endpoints/${f.a.endpoint}/resend`, { since: '1970-01-01T00:00:00Z', dry_run: true }),
        200,
        'resend dry run',
      );
      assert.ok(body.matched >= 3, `matched ${body.matched}`);
    },
  },
  'POST /v1/deliveries': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const item = { endpoint_id: o.endpoint, event_type: 'x', payload: {} };
      await status(s('POST', '/v1/deliveries', item), 404, 'enqueue to B endpoint');
      await status(
        s('POST', '/v1/deliveries', { tenant_id: o.tenant, event_type: 'x', payload: {} }),
        404,
        'B',
      );
    },
    own: async (s, f) => {
      const body = await status(
        s('POST', '/v1/deliveries', { event_type: 'x', payload: {} }),
        202,
        'fan-out',
      );
      const targets = body.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id);
      assert.ok(targets.includes(f.a.endpoint) && !targets.includes(f.b.endpoint));
    },
  },
  'POST /v1/deliveries/batch': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const items = [
        { event_type: 'x', payload: {} },
        { endpoint_id: o.endpoint, event_type: 'x', payload: {} },
      ];
      const body = await status(s('POST', '/v1/deliveries/batch', { items }), 404, 'batch to B');
      assert.equal(body.error.details.index, 1);
    },
    own: async (s, f) => {
      const items = [{ endpoint_id: f.a.endpoint, event_type: 'x', payload: {} }];
      await status(s('POST', '/v1/deliveries/batch', { items }), 202, 'batch');
    },
  },
  'GET /v1/deliveries': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      assert.deepEqual(ids(await status(s('GET', `/v1/deliveries?tenant_id=${o.tenant}`), 200, 'B')), []);
      assert.deepEqual(
        ids(await status(s('GET', `/v1/deliveries?endpoint_id=${o.endpoint}`), 200, 'B ep')),
        [],
      );
      assert.ok(!ids(await status(s('GET', '/v1/deliveries?limit=500'), 200, 'all')).includes(o.delivery));
    },
    own: async (s, f) => {
      assert.ok(ids(await status(s('GET', '/v1/deliveries?limit=500'), 200, 'list')).includes(f.a.delivery));
    },
  },
  'GET /v1/deliveries/:id': {
    kind: 'scoped',
    cross: async (s, _f, o) => void (await status(s('GET', `/v1/deliveries/${o.delivery}`), 404, 'get B')),
    own: async (s, f) => void (await status(s('GET', `/v1/deliveries/${f.a.delivery}`), 200, 'get')),
  },
  'POST /v1/deliveries/:id/replay': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('POST', `/v1/deliveries/${o.dead}/replay`), 404, 'replay B')),
    own: async (s, f) => void (await status(s('POST', `/v1/deliveries/${f.a.dead}/replay`), 202, 'replay')),
  },
  'GET /v1/dead-letters/analysis': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const q = (query: string) => s('GET', `/v1/dead-letters/analysis?${query}`);
      const endpointsOf = (b: { endpoints: { endpoint_id: string }[] }) =>
        b.endpoints.map((e) => e.endpoint_id);
      assert.deepEqual(endpointsOf(await status(q(`tenant_id=${o.tenant}`), 200, 'B')), []);
      assert.deepEqual(endpointsOf(await status(q(`endpoint_id=${o.endpoint}`), 200, 'B ep')), []);
      assert.ok(!endpointsOf(await status(q(''), 200, 'all')).includes(o.endpoint));
    },
    own: async (s, f) => {
      const body = await status(s('GET', '/v1/dead-letters/analysis'), 200, 'analysis');
      assert.ok(body.endpoints.some((e: { endpoint_id: string }) => e.endpoint_id === f.a.endpoint));
    },
  },
  'POST /v1/dead-letters/replay': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      await status(
        s('POST', '/v1/dead-letters/replay', { endpoint_id: o.endpoint }),
        404,
        'replay B endpoint',
      );
      await status(s('POST', '/v1/dead-letters/replay', { tenant_id: o.tenant }), 404, 'replay tenant B');
      // An unfiltered-by-tenant replay of a bound key stays in its tenant: B's dead letter untouched.
      await status(
        s('POST', '/v1/dead-letters/replay', { since: '1970-01-01T00:00:00Z', dry_run: true }),
        200,
        'all',
      );
    },
    own: async (s, f) => {
      const body = await status(
        s('POST', '/v1/dead-letters/replay', { endpoint_id: f.a.endpoint, dry_run: true }),
        200,
        'dry run',
      );
      assert.ok(body.matched >= 1);
    },
  },
  'GET /v1/dead-letters/replays/:id': {
    kind: 'scoped',
    cross: async (s, _f, o) =>
      void (await status(s('GET', `/v1/dead-letters/replays/${o.replay}`), 404, 'B replay')),
    own: async (s, f) =>
      void (await status(s('GET', `/v1/dead-letters/replays/${f.a.replay}`), 200, 'replay')),
  },
  'GET /v1/pipeline': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const body = await status(s('GET', `/v1/pipeline?tenant_id=${o.tenant}`), 200, 'B pipeline');
      assert.equal(body.pending + body.awaiting_retry + body.in_flight + body.dead_letter, 0);
    },
    own: async (s, f) => {
      // A's view counts exactly A's queue rows, not B's four.
      const body = await status(s('GET', '/v1/pipeline'), 200, 'pipeline');
      assert.equal(body.pending + body.awaiting_retry + body.in_flight, await f.queuedA());
    },
  },
  'GET /v1/messages': {
    kind: 'scoped',
    cross: async (s, f, o) => {
      assert.deepEqual(ids(await status(s('GET', `/v1/messages?tenant_id=${o.tenant}`), 200, 'B')), []);
      const bMessages = new Set(
        (await f.sql`SELECT id FROM messages WHERE tenant_id = ${o.tenant}`).map((r) => r.id as string),
      );
      const all = ids(await status(s('GET', '/v1/messages?limit=500'), 200, 'all'));
      assert.ok(all.length > 0 && all.every((id) => !bMessages.has(id!)), 'no message of B');
      // A cursor taken from B's log only positions within A's own messages.
      const oldestB = [...bMessages].sort()[0]!;
      const after = ids(await status(s('GET', `/v1/messages?cursor=${oldestB}&limit=500`), 200, 'B cursor'));
      assert.ok(
        after.every((id) => !bMessages.has(id!)),
        'a B cursor shows nothing of B',
      );
    },
    own: async (s, f) => {
      const mine = await f.messageOf(f.a.delivery);
      assert.ok(ids(await status(s('GET', '/v1/messages?limit=500'), 200, 'list')).includes(mine));
    },
  },
  'POST /v1/messages/:id/expunge': {
    kind: 'scoped',
    cross: async (s, f, o) => {
      const message = await f.messageOf(o.delivery);
      await status(s('POST', `/v1/messages/${message}/expunge`), 404, 'expunge B');
    },
    own: async (s, f) => {
      const sent = await status(
        s('POST', '/v1/deliveries', { endpoint_id: f.a.endpoint, event_type: 'x', payload: { erase: 'me' } }),
        202,
        'enqueue to erase',
      );
      const body = await status(s('POST', `/v1/messages/${sent.message_id}/expunge`), 200, 'expunge');
      assert.equal(body.payload_expired, true);
    },
  },
  // Evaluates a filter on the payload in the request: reads and stores nothing of any tenant.
  'POST /v1/filters/test': {
    kind: 'shared',
    own: async (s) => {
      const body = await status(
        s('POST', '/v1/filters/test', { filter: { a: { $gt: 1 } }, payload: { a: 2 } }),
        200,
        'filter test',
      );
      assert.equal(body.matches, true);
    },
  },
  'GET /v1/event-types': {
    kind: 'shared',
    own: async (s) => void (await status(s('GET', '/v1/event-types'), 200, 'catalog')),
  },
  'GET /v1/event-types/:name': {
    kind: 'shared',
    own: async (s) => void (await status(s('GET', '/v1/event-types/order.created'), 200, 'catalog entry')),
  },
  'PUT /v1/event-types/:name': { kind: 'admin_only' },
  'DELETE /v1/event-types/:name': { kind: 'admin_only' },
  'GET /v1/tenants': { kind: 'admin_only' },
  'PUT /v1/tenants/:id': { kind: 'admin_only' },
  'GET /v1/tenants/:id': { kind: 'admin_only' },
  'DELETE /v1/tenants/:id': { kind: 'admin_only' },
  'POST /v1/tenants/:id/portal-sessions': { kind: 'admin_only' },
  'POST /v1/api-keys': { kind: 'admin_only' },
  'GET /v1/api-keys': { kind: 'admin_only' },
  'DELETE /v1/api-keys/:id': { kind: 'admin_only' },
  'GET /v1/audit-log': { kind: 'admin_only' },
  // The calling key itself: never another tenant's name, whatever the key.
  'GET /v1/whoami': {
    kind: 'scoped',
    cross: async (s, _f, o) => {
      const body = await status(s('GET', '/v1/whoami'), 200, 'whoami');
      assert.notEqual(body.tenant_id, o.tenant);
    },
    own: async (s) => {
      const body = await status(s('GET', '/v1/whoami'), 200, 'whoami');
      assert.equal(body.tenant_id, 'tenant_a');
    },
  },
};

describe('tenant isolation over every /v1 route', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let keyA: Awaited<ReturnType<typeof keySender>>;
  /** A key bound to no tenant with every scope but admin: an internal service. */
  let unbound: Awaited<ReturnType<typeof keySender>>;
  const f = { a: {}, b: { tenant: 'tenant_b' }, ops: { tenant: 'hookpost' } } as Fixture;

  /**
   * Everything of one other tenant, as one digest: no cross-tenant call may change it. Replays
   * across tenants (tenant_id NULL) count for B: a bound key's replay must never be one.
   */
  const snapshot = async (o: Other) =>
    (
      await db.sql`
        SELECT md5(concat_ws('|',
          (SELECT string_agg(concat_ws(',', id, url, description, enabled, deleted_at, updated_at), ';' ORDER BY id)
             FROM endpoints WHERE tenant_id = ${o.tenant}),
          (SELECT string_agg(concat_ws(',', secret, expires_at), ';' ORDER BY created_at) FROM endpoint_secrets
             WHERE endpoint_id = ${o.endpoint}),
          (SELECT string_agg(concat_ws(',', d.id, d.status, d.attempt_count, d.dead_at), ';' ORDER BY d.id)
             FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE m.tenant_id = ${o.tenant}),
          (SELECT string_agg(concat_ws(',', id, md5(payload), payload_expired_at), ';' ORDER BY id)
             FROM messages WHERE tenant_id = ${o.tenant}),
          (SELECT string_agg(concat_ws(',', delivery_id, next_attempt_at, attempt_count), ';' ORDER BY delivery_id)
             FROM delivery_queue WHERE endpoint_id = ${o.endpoint}),
          (SELECT count(*) FROM replay_audit
             WHERE tenant_id = ${o.tenant} OR (tenant_id IS NULL AND ${o === f.b})),
          (SELECT count(*) FROM replayed_deliveries r JOIN deliveries d ON d.id = r.delivery_id
             WHERE d.endpoint_id = ${o.endpoint})
        )) AS digest`
    )[0]!.digest as string;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    f.sql = db.sql;
    f.messageOf = async (deliveryId) =>
      (await db.sql`SELECT message_id FROM deliveries WHERE id = ${deliveryId}`)[0]!.message_id as string;
    f.queuedA = async () =>
      (
        await db.sql`SELECT count(*)::int AS n FROM delivery_queue q JOIN endpoints e ON e.id = q.endpoint_id
                     WHERE e.tenant_id = 'tenant_a'`
      )[0]!.n;
    // Two tenants with identical subscriptions; B has more of everything. The reserved tenant
    // has an operations endpoint like B's, made by the admin token (the only key that may).
    f.a.endpoint = (await createEndpoint(t, 'http://127.0.0.1:9/a', { tenant_id: 'tenant_a' })).id;
    f.a.spare = (
      await createEndpoint(t, 'http://127.0.0.1:9/a2', { tenant_id: 'tenant_a', event_types: ['y'] })
    ).id;
    f.b.endpoint = (await createEndpoint(t, 'http://127.0.0.1:9/b', { tenant_id: 'tenant_b' })).id;
    f.ops.endpoint = (
      await createEndpoint(t, 'http://127.0.0.1:9/pager?key=s3cret', { tenant_id: 'hookpost' })
    ).id;
    const enqueue = async (endpoint: string) =>
      (
        await status(
          t.send('POST', '/v1/deliveries', { endpoint_id: endpoint, event_type: 'x', payload: {} }),
          202,
          'seed',
        )
      ).deliveries[0].id as string;
    f.a.delivery = await enqueue(f.a.endpoint);
    f.a.dead = await enqueue(f.a.endpoint);
    f.a.kept = await enqueue(f.a.endpoint); // stays dead when f.a.dead is replayed
    for (const o of [f.b, f.ops]) {
      o.dead = await enqueue(o.endpoint);
      for (let i = 0; i < 4; i++) o.delivery = await enqueue(o.endpoint);
    }
    // Make one delivery of each a dead letter, as the dispatcher would after its last attempt.
    await db.sql`
      WITH dead AS (DELETE FROM delivery_queue WHERE delivery_id IN (${f.a.dead}, ${f.a.kept}, ${f.b.dead}, ${f.ops.dead}) RETURNING delivery_id)
      UPDATE deliveries SET status = 'dead_letter', dead_at = now(), attempt_count = 8, last_status_code = 500,
        last_error_class = 'http_500'
      WHERE id IN (SELECT delivery_id FROM dead)`;
    // Every endpoint slow (latency histograms as the dispatcher keeps them, summarised as its
    // maintenance does).
    const buckets = Array.from({ length: BUCKET_COUNT }, (_, i) => (i === bucketIndex(500) ? 50 : 0));
    for (const id of [f.a.endpoint, f.b.endpoint, f.ops.endpoint]) {
      await db.sql`INSERT INTO endpoint_latency_minutes (endpoint_id, minute, buckets)
                   VALUES (${id}, date_trunc('minute', now()), ${buckets})`;
    }
    await refreshHealthPercentiles(db.sql);
    await status(
      t.send('PUT', '/v1/event-types/order.created', { description: 'an order' }),
      201,
      'event type',
    );
    // A replay in each tenant (dry runs write the progress row).
    const replay = async (tenant: string) =>
      (
        await status(
          t.send('POST', '/v1/dead-letters/replay', { tenant_id: tenant, dry_run: true }),
          200,
          'replay',
        )
      ).audit_id as string;
    f.a.replay = await replay('tenant_a');
    f.b.replay = await replay('tenant_b');
    f.ops.replay = await replay('hookpost');
    const scopes = ['endpoints:read', 'endpoints:write', 'deliveries:read', 'deliveries:write', 'replay'];
    keyA = await keySender(t, { scopes, tenant_id: 'tenant_a' });
    unbound = await keySender(t, { scopes, name: 'internal service' });
  });
  after(async () => {
    await db.drop();
  });

  it('has a matrix entry for every /v1 route, and no entry for a route that does not exist', () => {
    const routes = new Set(
      t.app.routes
        .filter((r) => r.method !== 'ALL' && r.path.startsWith('/v1/'))
        .map((r) => `${r.method} ${r.path}`),
    );
    const missing = [...routes].filter((r) => !(r in MATRIX));
    assert.deepEqual(missing, [], `routes without an isolation case: ${missing.join(', ')}`);
    assert.deepEqual(
      Object.keys(MATRIX).filter((r) => !routes.has(r)),
      [],
      'matrix entries for routes that no longer exist',
    );
  });

  /** Every route of the matrix, by `send`, against `o`'s resources: 404, nothing, or 403. */
  async function crossEveryRoute(send: Send, o: Other, who: string) {
    for (const [route, c] of Object.entries(MATRIX)) {
      if (c.kind === 'scoped')
        await c.cross(send, f, o).catch((e: Error) => assert.fail(`${route} (${who}): ${e.message}`));
      if (c.kind === 'admin_only') {
        const [method, path] = route.split(' ') as [string, string];
        const res = await send(method, path.replace(/:[a-z]+/g, o.tenant), method === 'GET' ? undefined : {});
        assert.equal(res.status, 403, `${route} with a non-admin key (${who})`);
      }
    }
  }

  it("a key of tenant A gets 404 or nothing for B's resources, and B is unchanged", async () => {
    const before = await snapshot(f.b);
    await crossEveryRoute(keyA.send, f.b, 'bound to A');
    assert.equal(await snapshot(f.b), before, "tenant B's rows changed");
  });

  it('for every key but an admin one the reserved tenant hookpost does not exist, on any route', async () => {
    const before = await snapshot(f.ops);
    await crossEveryRoute(unbound.send, f.ops, 'unbound');
    await crossEveryRoute(keyA.send, f.ops, 'bound to A');
    assert.equal(await snapshot(f.ops), before, "the reserved tenant's rows changed");
    // What an unbound key's unfiltered views count leaves the reserved tenant out as well.
    const pipeline = await status(unbound.send('GET', '/v1/pipeline'), 200, 'pipeline');
    const [queued] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue q JOIN endpoints e
      ON e.id = q.endpoint_id WHERE e.tenant_id <> 'hookpost'`;
    assert.equal(pipeline.pending + pipeline.awaiting_retry + pipeline.in_flight, queued!.n);
    const [dead] = await db.sql`SELECT count(*)::int AS n FROM deliveries d JOIN endpoints e
      ON e.id = d.endpoint_id WHERE d.dead_at IS NOT NULL AND e.tenant_id <> 'hookpost'`;
    assert.equal(pipeline.dead_letter, dead!.n);
    const dry = await status(
      unbound.send('POST', '/v1/dead-letters/replay', { since: '1970-01-01T00:00:00Z', dry_run: true }),
      200,
      'replay everything',
    );
    assert.equal(dry.matched, dead!.n, "an unbound key's replay matches no dead letter of hookpost");
    // A fan-out by an unbound key never reaches an operations endpoint, and the admin still does.
    const fanOut = await status(
      unbound.send('POST', '/v1/deliveries', { event_type: 'x', payload: {} }),
      202,
      'fan-out',
    );
    assert.ok(!fanOut.deliveries.some((d: { endpoint_id: string }) => d.endpoint_id === f.ops.endpoint));
    await status(t.send('GET', `/v1/endpoints/${f.ops.endpoint}`), 200, 'admin reads it');
    const listed = ids(await status(t.send('GET', '/v1/endpoints?tenant_id=hookpost'), 200, 'admin lists'));
    assert.deepEqual(listed, [f.ops.endpoint]);
  });

  it('the same routes work for A on its own resources', async () => {
    for (const [route, c] of Object.entries(MATRIX)) {
      if (c.kind !== 'admin_only')
        await c.own(keyA.send, f).catch((e: Error) => assert.fail(`${route}: ${e.message}`));
    }
  });
});
