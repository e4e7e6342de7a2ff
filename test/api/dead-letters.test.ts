/**
 * The dead-letter analysis over dead letters produced by real traffic: real receivers answering
 * 401/403, 429, a burst of 503s, and mixed failures. Only the drip needs time spread over days,
 * which a test cannot wait for: there the dead letters are real, and their dead_at is moved back
 * in the database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

type Dispatcher = Awaited<ReturnType<typeof startTestDispatcher>>;

describe('GET /v1/dead-letters/analysis', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Dispatcher;
  const receivers: Receiver[] = [];
  const ids: Record<'outage' | 'auth' | 'limited' | 'drip' | 'mixed' | 'refused', string> = {
    outage: '',
    auth: '',
    limited: '',
    drip: '',
    mixed: '',
    refused: '',
  };

  async function endpointAnswering(handler: (n: number) => number, query = '', extra = {}): Promise<string> {
    let n = 0;
    const receiver = await startReceiver((_req, res) => res.writeHead(handler(n++)).end());
    receivers.push(receiver);
    return (await createEndpoint(t, `${receiver.url}${query}`, extra)).id;
  }
  const deadCount = async (endpointId: string) =>
    (
      await db.sql`SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = ${endpointId} AND status = 'dead_letter'`
    )[0]!.n as number;
  const analysis = async (query: string) => {
    const res = await t.send('GET', `/v1/dead-letters/analysis${query}`);
    assert.equal(res.status, 200);
    const body = await res.json();
    return new Map<string, Record<string, unknown>>(
      body.endpoints.map((e: { endpoint_id: string }) => [e.endpoint_id, e]),
    );
  };

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    // Two attempts, milliseconds apart, and a breaker that never opens: the 503 burst must reach
    // dead_letter within the test instead of being parked by an open circuit.
    dispatcher = await startTestDispatcher(db, {
      HOOKPOST_MAX_ATTEMPTS: '2',
      HOOKPOST_BREAKER_THRESHOLD: '100000',
    });
    // A partner's token in the query string: the analysis shows origin and path only.
    ids.outage = await endpointAnswering(() => 503, '?token=s3cret', { description: 'orders service' });
    ids.auth = await endpointAnswering((n) => (n % 3 === 0 ? 403 : 401));
    ids.limited = await endpointAnswering(() => 429);
    ids.drip = await endpointAnswering(() => 500);
    // A third each of 400, 503 and 429, by payload (retries do not shift the mix).
    const mixed = await startReceiver((_req, res, body) =>
      res.writeHead([400, 503, 429][JSON.parse(body.toString()).i % 3]!).end(),
    );
    receivers.push(mixed);
    ids.mixed = (await createEndpoint(t, mixed)).id;
    // Nothing listens on this port: every attempt is connection_refused.
    const closed = await startReceiver();
    await closed.close();
    ids.refused = (await createEndpoint(t, closed)).id;
    const counts = { outage: 55, auth: 6, limited: 5, drip: 4, mixed: 6, refused: 3 };
    for (const [name, count] of Object.entries(counts)) {
      await enqueueMany(t.send, ids[name as keyof typeof ids], count);
    }
    for (const [name, count] of Object.entries(counts)) {
      await waitFor(
        `${count} dead letters for ${name}`,
        async () => (await deadCount(ids[name as keyof typeof ids])) === count,
      );
    }
    // The drip: the same real dead letters, as if they had died over three days.
    await db.sql`
      UPDATE deliveries d SET dead_at = now() - make_interval(hours => h.hours)
      FROM (SELECT id, (ARRAY[70, 50, 26, 2])[row_number() OVER (ORDER BY id)] AS hours
            FROM deliveries WHERE endpoint_id = ${ids.drip}) h
      WHERE d.id = h.id`;
  });
  after(async () => {
    await dispatcher.stop();
    await Promise.all(receivers.map((r) => r.close()));
    await db.drop();
  });

  it('recognises each pattern from the traffic that produces it', async () => {
    const byEndpoint = await analysis('?hours=96');
    const pattern = (id: string) => byEndpoint.get(id)?.pattern;
    assert.equal(pattern(ids.outage), 'outage_cluster');
    assert.equal(pattern(ids.auth), 'auth_failure');
    assert.equal(pattern(ids.limited), 'rate_limited');
    assert.equal(pattern(ids.drip), 'gradual_drip');
    assert.equal(pattern(ids.mixed), 'mixed');
    // One error class, though no shape in time: it names the class, not "mixed".
    assert.equal(pattern(ids.refused), 'unreachable');
    assert.deepEqual(byEndpoint.get(ids.refused)?.error_counts, { connection_refused: 3 });
    assert.match(String(byEndpoint.get(ids.refused)?.advice), /^Mostly connection_refused \(100%\)/);
    for (const e of byEndpoint.values()) assert.ok(typeof e.advice === 'string' && e.advice.length > 20);
  });

  it('reports counts, the main error and status, timing and attempts per endpoint', async () => {
    const res = await t.send('GET', '/v1/dead-letters/analysis');
    const body = await res.json();
    assert.equal(body.hours, 24);
    assert.equal(body.endpoints[0].endpoint_id, ids.outage, 'most dead letters first');
    const outage = body.endpoints[0];
    assert.equal(outage.dead_count, 55);
    assert.equal(outage.primary_error, 'http_503');
    assert.equal(outage.primary_status_code, 503);
    assert.deepEqual(outage.error_counts, { http_503: 55 });
    assert.equal(outage.endpoint_description, 'orders service');
    const [stored] = await db.sql<{ url: string }[]>`SELECT url FROM endpoints WHERE id = ${ids.outage}`;
    assert.match(stored!.url, /\?token=s3cret$/);
    assert.equal(outage.endpoint_url, stored!.url.replace(/\?.*$/, ''));
    assert.doesNotMatch(JSON.stringify(body), /s3cret/);
    assert.equal(outage.avg_attempts, 2, 'retried up to HOOKPOST_MAX_ATTEMPTS');
    assert.ok(Date.parse(outage.first_dead_at) <= Date.parse(outage.last_dead_at));
    assert.ok(Date.now() - Date.parse(outage.last_dead_at) < 60_000);
    const auth = body.endpoints.find((e: { endpoint_id: string }) => e.endpoint_id === ids.auth);
    assert.equal(auth.primary_status_code, 401);
    assert.equal(auth.avg_attempts, 1, 'a 401 is not retried');
    const limited = body.endpoints.find((e: { endpoint_id: string }) => e.endpoint_id === ids.limited);
    assert.equal(limited.primary_error, 'http_429');
    // Within 24 h only the drip's most recent dead letter is left: no shape in time, but its
    // class (a 500) still says what it is.
    const drip = body.endpoints.find((e: { endpoint_id: string }) => e.endpoint_id === ids.drip);
    assert.equal(drip.dead_count, 1);
    assert.equal(drip.pattern, 'server_errors');
    assert.equal(drip.endpoint_description, null, 'no description given');
  });

  it('takes its pattern thresholds from HOOKPOST_DLQ_* (an operator may call 55 in an hour normal)', async () => {
    const tuned = await createTestApp(db, { HOOKPOST_DLQ_CLUSTER_COUNT: '100' });
    const res = await tuned.send('GET', `/v1/dead-letters/analysis?hours=96&endpoint_id=${ids.outage}`);
    const [outage] = (await res.json()).endpoints;
    assert.equal(outage.dead_count, 55);
    assert.equal(outage.pattern, 'server_errors');
    // No longer an outage by the numbers, but every one is a 503: the pattern and advice say so.
    assert.match(outage.advice, /^Mostly http_503 \(100%\): the partner's server fails/);
  });

  it('filters by endpoint', async () => {
    const byEndpoint = await analysis(`?hours=1&endpoint_id=${ids.limited}`);
    assert.deepEqual([...byEndpoint.keys()], [ids.limited]);
    assert.equal((await analysis('?endpoint_id=ep_unknown')).size, 0);
  });

  it('answers 400 naming the parameter for bad input', async () => {
    for (const query of [
      'hours=abc',
      'hours=0',
      'hours=-1',
      'hours=721',
      'hours=',
      'limit=0',
      'endpoint_id=',
    ]) {
      const res = await t.send('GET', `/v1/dead-letters/analysis?${query}`);
      assert.equal(res.status, 400, query);
      const body = await res.json();
      assert.equal(body.error.code, 'validation_failed');
      assert.match(body.error.message, new RegExp(`^${query.split('=')[0]}: `), query);
    }
    const noAuth = await t.request('/v1/dead-letters/analysis');
    assert.equal(noAuth.status, 401);
  });
});
