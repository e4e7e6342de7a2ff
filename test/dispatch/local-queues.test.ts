/** The dispatcher's local buffer (dispatch/local-queues.ts), directly: no database, no clock. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LATE_RESULT_MARGIN_MS, leaseCoversAttempt, resultMayBeLate } from '../../src/dispatch/lease.js';
import { LocalQueues } from '../../src/dispatch/local-queues.js';

/** Takes until nothing is takeable; returns the endpoint of each item taken, in order. */
function takeAll<T>(q: LocalQueues<T>): string[] {
  const order: string[] = [];
  for (let next = q.take(); next; next = q.take()) order.push(next.endpointId);
  return order;
}

describe('local buffer', () => {
  it('serves endpoints round-robin, each in FIFO order', () => {
    const q = new LocalQueues<string>(10);
    for (const item of ['a1', 'a2', 'a3']) q.push('a', item);
    for (const item of ['b1', 'b2']) q.push('b', item);
    q.push('c', 'c1');
    const items: string[] = [];
    for (let next = q.take(); next; next = q.take()) items.push(next.item);
    assert.deepEqual(items, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('caps the HTTP slots one endpoint may hold, and frees them on done()', () => {
    const q = new LocalQueues<number>(2);
    for (let i = 0; i < 5; i++) q.push('slow', i);
    q.push('fast', 0);
    assert.deepEqual(takeAll(q), ['slow', 'fast', 'slow'], 'the slow endpoint stops at its two slots');
    assert.equal(q.take(), undefined);
    q.done('slow');
    assert.deepEqual(takeAll(q), ['slow']);
  });

  it('reports an endpoint at its limit as saturated, and only the others as room-taking', () => {
    const q = new LocalQueues<number>(2); // limit 4 per endpoint: 2 in flight + 2 queued
    for (let i = 0; i < 4; i++) q.push('slow', i);
    q.push('fast', 0);
    q.push('fast', 1);
    takeAll(q); // slow: 2 in flight, 2 queued; fast: 2 in flight
    assert.deepEqual(q.load(), { saturated: ['slow'], queuedElsewhere: 0 });
    q.push('fast', 2);
    assert.deepEqual(q.load(), { saturated: ['slow'], queuedElsewhere: 1 });
    assert.equal(q.perEndpointLimit, 4);
  });

  it('remove() hands back one endpoint queued items and keeps the ring order of the rest', () => {
    const q = new LocalQueues<string>(10);
    q.push('a', 'a1');
    q.push('b', 'b1');
    q.push('b', 'b2');
    q.push('c', 'c1');
    assert.equal(q.take()?.item, 'a1');
    assert.deepEqual(q.remove('b'), ['b1', 'b2']);
    assert.deepEqual(q.remove('b'), []);
    assert.equal(q.take()?.item, 'c1');
    assert.equal(q.take(), undefined);
  });

  it('drain() empties the buffer and keeps in-flight accounting', () => {
    const q = new LocalQueues<string>(1);
    q.push('a', 'a1');
    q.push('a', 'a2');
    q.take();
    assert.deepEqual(q.drain(), ['a2']);
    assert.equal(q.take(), undefined);
    q.push('a', 'a3');
    assert.equal(q.take(), undefined, 'a1 still holds the only slot');
    q.done('a');
    assert.equal(q.take()?.item, 'a3');
  });
});

describe('lease cover', () => {
  it('an attempt starts only if its timeout and the result write fit in the lease', () => {
    // lease 60 s claimed at 0, timeout 15 s, write margin 1 s: the last start is at 44 s
    assert.equal(leaseCoversAttempt(44_000, 60_000, 15_000, 60), true);
    assert.equal(leaseCoversAttempt(44_001, 60_000, 15_000, 60), false);
    // short test leases keep a tenth of the lease for the write
    assert.equal(leaseCoversAttempt(1_700, 3_000, 1_000, 3), true);
    assert.equal(leaseCoversAttempt(1_701, 3_000, 1_000, 3), false);
  });

  it('a result is looked up as a possibly late success only near or past its lease end', () => {
    assert.equal(resultMayBeLate(60_000 - LATE_RESULT_MARGIN_MS - 1, 60_000), false);
    assert.equal(resultMayBeLate(60_000 - LATE_RESULT_MARGIN_MS, 60_000), true);
    assert.equal(resultMayBeLate(90_000, 60_000), true);
  });
});
