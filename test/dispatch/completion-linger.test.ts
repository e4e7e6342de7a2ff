/**
 * The completion writer's linger (completions.ts): results of unordered deliveries that finish
 * close together are written in one statement, once the linger has passed; a result that holds
 * up an ordering key or a max_in_flight slot is written at once; shutdown's drain writes what waits
 * without lingering.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompletionWriter } from '../../src/dispatch/completions.js';
import { createLogger } from '../../src/log.js';
import type { ClaimedDelivery } from '../../src/queue/claim.js';
import {
  claimDue,
  createTestApp,
  createTestDatabase,
  deliveredResult,
  type TestDatabase,
  waitFor,
} from '../helpers.js';

const success = (claim: ClaimedDelivery, keyed = false, freesSlot = false) =>
  deliveredResult(claim, { attempt: claim.attempt, keyed, freesSlot });

describe('completion writer: linger', () => {
  let db: TestDatabase;
  let claims: ClaimedDelivery[];
  const batches: number[] = [];
  let writer: CompletionWriter;

  before(async () => {
    db = await createTestDatabase();
    const t = await createTestApp(db);
    const endpointId = (await (await t.send('POST', '/v1/endpoints', { url: 'http://127.0.0.1:9/x' })).json())
      .id;
    const items = Array.from({ length: 7 }, (_, i) => ({
      endpoint_id: endpointId,
      event_type: 'q',
      payload: { i },
    }));
    assert.equal((await t.send('POST', '/v1/deliveries/batch', { items })).status, 202);
    claims = await claimDue(db.sql, {
      limit: 7,
      leaseSeconds: 60,
      saturated: [],
      perEndpointLimit: 1000,
      limitedEndpoints: false,
    });
    assert.equal(claims.length, 7);
    writer = new CompletionWriter({
      sql: db.sql,
      log: createLogger('silent'),
      lingerMs: 1500,
      onWritten: async (batch) => {
        batches.push(batch.length);
      },
    });
  });
  after(() => db.drop());

  const delivered = async () =>
    (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivered'`)[0]!
      .n;

  it('writes results that finish within the linger in one statement, after it', async () => {
    const startedAt = Date.now();
    writer.add(success(claims[0]!), Date.now() + 60_000);
    await new Promise((r) => setTimeout(r, 50));
    writer.add(success(claims[1]!), Date.now() + 60_000);
    writer.add(success(claims[2]!), Date.now() + 60_000);
    assert.equal(await delivered(), 0, 'nothing written while the linger runs');
    await waitFor('the lingered write', () => batches.length === 1, 5000);
    assert.ok(Date.now() - startedAt >= 1490, `written after ${Date.now() - startedAt} ms`);
    assert.deepEqual(batches, [3]);
    assert.equal(await delivered(), 3);
  });

  it('writes a result of an ordered delivery at once, with whatever waits', async () => {
    writer.add(success(claims[3]!), Date.now() + 60_000);
    const startedAt = Date.now();
    writer.add(success(claims[4]!, true), Date.now() + 60_000);
    await waitFor('the keyed write', () => batches.length === 2, 5000);
    assert.ok(Date.now() - startedAt < 1000, `written after ${Date.now() - startedAt} ms`);
    assert.deepEqual(batches, [3, 2]);
  });

  it('writes a result of an endpoint with max_in_flight at once: its slot is free only then', async () => {
    const startedAt = Date.now();
    writer.add(success(claims[5]!, false, true), Date.now() + 60_000);
    await waitFor('the write that frees the slot', () => batches.length === 3, 5000);
    assert.ok(Date.now() - startedAt < 1000, `written after ${Date.now() - startedAt} ms`);
    assert.deepEqual(batches, [3, 2, 1]);
  });

  it('drains without lingering', async () => {
    writer.add(success(claims[6]!), Date.now() + 60_000);
    const startedAt = Date.now();
    assert.equal(await writer.drain(), 0);
    assert.ok(Date.now() - startedAt < 1000, `drained in ${Date.now() - startedAt} ms`);
    assert.equal(await delivered(), 7);
  });
});
