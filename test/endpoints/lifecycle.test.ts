/**
 * The endpoint lifecycle (src/endpoints/lifecycle.ts): closing a circuit by hand, and deleting a
 * tenant's endpoints while an enqueue races the delete.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { applyOutcomes } from '../../src/endpoints/breaker.js';
import { closeCircuits } from '../../src/endpoints/lifecycle.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  enqueueMany,
  type TestDatabase,
} from '../helpers.js';

const POLICY = { threshold: 1, cooldownSeconds: 3600, maxCooldownSeconds: 3600, disableAfterSeconds: 86_400 };

describe('endpoint lifecycle', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  /** Whether each of the endpoint's queue rows is parked. */
  const parked = async (endpointId: string) =>
    (
      await db.sql<{ parked: boolean }[]>`
        SELECT state = 'parked' AS parked FROM delivery_queue WHERE endpoint_id = ${endpointId}`
    ).map((r) => r.parked);

  it('closing a circuit by hand closes it, forgets its failures, unparks its rows and tells the operators', async () => {
    await createEndpoint(t, 'http://127.0.0.1:9/ops', { tenant_id: 'hookpost' });
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/down');
    await enqueueMany(t.send, ep.id, 3);
    // One retryable failure opens it (threshold 1): its waiting rows park.
    const opened = await applyOutcomes(
      db.sql,
      [{ endpointId: ep.id, hadSuccess: false, trailingFailures: 1, failures: 1 }],
      [],
      POLICY,
    );
    assert.deepEqual(opened, [{ endpointId: ep.id, from: 'closed', to: 'open' }]);
    assert.deepEqual(await parked(ep.id), [true, true, true]);

    assert.deepEqual(await closeCircuits(db.sql, [ep.id]), [
      { endpointId: ep.id, from: 'open', to: 'closed', released: 3 },
    ]);
    const [health] = await db.sql`
      SELECT state, consecutive_failures, failing_since, opened_at, cooldown_seconds FROM endpoint_health
      WHERE endpoint_id = ${ep.id}`;
    assert.deepEqual(
      { ...health },
      {
        state: 'closed',
        consecutive_failures: 0,
        failing_since: null,
        opened_at: null,
        cooldown_seconds: null,
      },
    );
    assert.deepEqual(await parked(ep.id), [false, false, false]);
    const events = await db.sql<{ payload: string }[]>`
      SELECT convert_from(payload, 'UTF8') AS payload FROM messages
      WHERE tenant_id = 'hookpost' AND event_type = 'endpoint.circuit_closed'`;
    assert.equal(events.length, 1);
    const event = JSON.parse(events[0]!.payload);
    assert.deepEqual(
      { endpoint: event.data.endpoint_id, previous: event.data.previous_state, by: event.data.closed_by },
      { endpoint: ep.id, previous: 'open', by: 'operator' },
    );

    // Already closed: nothing changes, no second event.
    assert.deepEqual(await closeCircuits(db.sql, [ep.id]), []);
    const [again] = await db.sql`
      SELECT count(*)::int AS n FROM messages WHERE tenant_id = 'hookpost' AND event_type = 'endpoint.circuit_closed'`;
    assert.equal(again!.n, 1);
  });

  it('closing the circuit of a disabled endpoint leaves its rows parked (they wait for the enable)', async () => {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/off');
    await enqueueMany(t.send, ep.id, 2);
    await applyOutcomes(
      db.sql,
      [{ endpointId: ep.id, hadSuccess: false, trailingFailures: 1, failures: 1 }],
      [],
      POLICY,
    );
    assert.equal((await t.send('PATCH', `/v1/endpoints/${ep.id}`, { enabled: false })).status, 200);
    // The API's enable resets the circuit too, so here the circuit is closed on its own.
    await db.sql`UPDATE endpoint_health SET state = 'open', opened_at = now(), cooldown_seconds = 3600 WHERE endpoint_id = ${ep.id}`;
    assert.deepEqual(await closeCircuits(db.sql, [ep.id]), [
      { endpointId: ep.id, from: 'open', to: 'closed', released: 0 },
    ]);
    assert.deepEqual(await parked(ep.id), [true, true]);
  });

  it('a tenant deleted while an enqueue to its endpoint commits keeps no queued delivery', async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = `gone_${round}`;
      const ep = await createEndpoint(t, 'http://127.0.0.1:9/race', { tenant_id: tenant });
      const items = Array.from({ length: 200 }, (_, i) => ({
        endpoint_id: ep.id,
        event_type: 'x',
        payload: { i },
      }));
      const [enq, del] = await Promise.all([
        t.send('POST', '/v1/deliveries/batch', { items }),
        new Promise((r) => setTimeout(r, round * 3)).then(() => t.send('DELETE', `/v1/tenants/${tenant}`)),
      ]);
      assert.ok([202, 404].includes(enq.status), `enqueue answered ${enq.status}`);
      assert.equal(del.status, 200);
      const [left] = await db.sql`SELECT count(*)::int AS n FROM delivery_queue WHERE endpoint_id = ${ep.id}`;
      assert.equal(left!.n, 0, `round ${round}: deliveries left queued for a deleted tenant's endpoint`);
    }
  });
});
