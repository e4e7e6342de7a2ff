/**
 * The lease ledger (dispatch/lease-ledger.ts) knows which rows the dispatcher holds under each of
 * its lease tokens; the hand-back releases the others. End to end in test/faults (lost claim
 * answer, failover).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaseLedger } from '../../src/dispatch/lease-ledger.js';
import { createLogger } from '../../src/log.js';
import { claimDue, createEndpoint, createTestApp, createTestDatabase, enqueueMany } from '../helpers.js';

describe('lease ledger', () => {
  it('holds claimed rows until their results are stored', () => {
    const ledger = new LeaseLedger(60_000);
    const token = ledger.next();
    ledger.answered(token, ['a', 'b']);
    assert.equal(ledger.held, 2);
    ledger.settled([{ deliveryId: 'a', leaseToken: token }]);
    assert.equal(ledger.held, 1);
    ledger.settled([{ deliveryId: 'b', leaseToken: 'someone-else' }]);
    assert.equal(ledger.held, 1, "another token's result changes nothing");
  });

  it('forgets tokens older than a lease: the reaper has their rows', () => {
    let now = 0;
    const ledger = new LeaseLedger(1000, () => now);
    ledger.answered(ledger.next(), ['a']);
    now = 1500;
    ledger.answered(ledger.next(), ['b']);
    assert.equal(ledger.held, 1);
  });

  it('hands back only when due, and only the rows it no longer holds', async () => {
    const db = await createTestDatabase();
    try {
      const t = await createTestApp(db);
      const ep = (await createEndpoint(t, 'http://127.0.0.1:9/x')).id;
      await enqueueMany(t.send, ep, 3);
      const ledger = new LeaseLedger(60_000);
      const token = ledger.next();
      const claimed = await claimDue(db.sql, {
        limit: 3,
        leaseSeconds: 60,
        saturated: [],
        perEndpointLimit: 3,
        limitedEndpoints: false,
        leaseToken: token,
      });
      assert.equal(claimed.length, 3);
      // Two of the three reached memory and were settled; their stored results were then lost
      // (as in a failover): leased still, but no longer held.
      ledger.answered(
        token,
        claimed.map((c) => c.id),
      );
      ledger.settled(claimed.slice(0, 2).map((c) => ({ deliveryId: c.id, leaseToken: token })));
      const leased = async () => {
        const rows = await db.sql<{ delivery_id: string }[]>`
          SELECT delivery_id FROM delivery_queue WHERE lease_token = ${token}::uuid ORDER BY delivery_id`;
        return rows.map((r) => r.delivery_id);
      };
      await ledger.handBack(db.sql, createLogger('silent'));
      assert.equal((await leased()).length, 3, 'nothing is handed back until due');
      ledger.reconnected();
      await ledger.handBack(db.sql, createLogger('silent'));
      assert.deepEqual(await leased(), [claimed[2]!.id], 'the held one stays leased, the others go back');
    } finally {
      await db.drop();
    }
  });
});
