/**
 * A delivery whose lease runs out on its last attempt (its dispatcher died) is dead-lettered by the reaper, not by the
 * completion writer: hookpost_dead_letters_total must count it all the same.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { createMetrics, type HookpostMetrics } from '../../src/metrics/registry.js';
import {
  claimDue,
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { parsePrometheusText } from './prom-text.js';

describe('dead letters from the lease reaper', () => {
  let db: TestDatabase;
  let receiver: Receiver;
  before(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await db.drop();
  });

  it('counts them in hookpost_dead_letters_total', async () => {
    const metrics: HookpostMetrics = createMetrics({ sql: db.sql, log: createLogger('silent'), maxAgeMs: 0 });
    const t = await createTestApp(db, {}, { metrics });
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: receiver.url })).json()).id;
    const res = await t.send('POST', '/v1/deliveries', {
      endpoint_id: endpointId,
      event_type: 't',
      payload: {},
    });
    const deliveryId = (await res.json()).deliveries[0].id;
    // A dispatcher that claims the only attempt and dies: nothing ever completes the lease.
    const claimed = await claimDue(db.sql, {
      limit: 10,
      leaseSeconds: 0.2,
      saturated: [],
      perEndpointLimit: 10,
      limitedEndpoints: false,
    });
    assert.deepEqual(
      claimed.map((c) => c.id),
      [deliveryId],
    );
    const dispatcher = await startTestDispatcher(db, { HOOKPOST_MAX_ATTEMPTS: '1' }, { metrics });
    try {
      await waitFor('the reaper to dead-letter it', async () => {
        const [row] = await db.sql`SELECT status, last_error_class FROM deliveries WHERE id = ${deliveryId}`;
        return row?.status === 'dead_letter' && row.last_error_class === 'lease_expired';
      });
      // The reaper counts after its statement answers, a moment after the row reads dead_letter.
      const counted = async () =>
        parsePrometheusText(await (await t.request('/metrics')).text()).value(
          'hookpost_dead_letters_total',
          {},
        );
      await waitFor('the reaper to count it', async () => (await counted()) === 1, 5000).catch(() => {});
      assert.equal(await counted(), 1);
      assert.equal(receiver.requests.length, 0, 'an exhausted delivery is not sent again');
    } finally {
      await dispatcher.stop();
    }
  });
});
