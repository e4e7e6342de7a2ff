/**
 * The key lookup cache and the failed-authentication throttle, with an injected clock: misses
 * never push out found keys, entries go one by one (never the whole cache at once), a miss is
 * remembered for a minute and a found key for a second; an address over its failure budget is
 * told how long to wait, and its window ends. Then through the API: the 21st invalid token in a
 * window is a 429 that costs no lookup, while a real key from the same address still passes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  FAILURE_WINDOW_MS,
  FAILURES_PER_WINDOW,
  FailedAuthThrottle,
  FOUND_TTL_MS,
  KeyLookupCache,
  MISSING_TTL_MS,
} from '../../src/api/key-lookup-cache.js';
import type { ApiKey } from '../../src/tenants/keys.js';
import { createTestApp, createTestDatabase, keySender, type TestDatabase } from '../helpers.js';

const key = (id: string) => ({ id }) as ApiKey;

describe('KeyLookupCache', () => {
  it('a flood of unknown tokens never evicts a found key', () => {
    const cache = new KeyLookupCache(100);
    for (let i = 0; i < 100; i++) cache.set(`real${i}`, key(`k${i}`), 0);
    for (let i = 0; i < 10_000; i++) cache.set(`guess${i}`, undefined, 1);
    assert.deepEqual(cache.sizes, { found: 100, missing: 100 });
    assert.deepEqual(cache.get('real0', 2), { state: 'fresh', key: key('k0') });
    // The oldest misses went first, one by one.
    assert.equal(cache.get('guess0', 2), undefined);
    assert.deepEqual(cache.get('guess9999', 2), { state: 'missing' });
  });

  it('a found key is fresh for a second, then looked up again; a miss is remembered for a minute', () => {
    const cache = new KeyLookupCache();
    cache.set('a', key('k'), 0);
    cache.set('b', undefined, 0);
    assert.equal(cache.get('a', FOUND_TTL_MS - 1)?.state, 'fresh');
    assert.equal(cache.get('a', FOUND_TTL_MS)?.state, 'stale');
    assert.equal(cache.get('b', MISSING_TTL_MS - 1)?.state, 'missing');
    assert.equal(cache.get('b', MISSING_TTL_MS), undefined);
    // A key revoked and looked up again is a miss from then on.
    cache.set('a', undefined, 5);
    assert.equal(cache.get('a', 6)?.state, 'missing');
  });
});

describe('FailedAuthThrottle', () => {
  it('blocks an address after its budget until the window ends, and no other address', () => {
    const throttle = new FailedAuthThrottle();
    for (let i = 0; i < FAILURES_PER_WINDOW; i++) {
      assert.equal(throttle.blockedForSeconds('10.0.0.1', 1000), 0);
      throttle.recordFailure('10.0.0.1', 1000);
    }
    assert.equal(throttle.blockedForSeconds('10.0.0.1', 1000), FAILURE_WINDOW_MS / 1000);
    assert.equal(throttle.blockedForSeconds('10.0.0.1', 1000 + FAILURE_WINDOW_MS - 1), 1);
    assert.equal(throttle.blockedForSeconds('10.0.0.2', 1000), 0);
    assert.equal(throttle.blockedForSeconds('10.0.0.1', 1000 + FAILURE_WINDOW_MS), 0);
  });

  it('remembers a bounded number of addresses', () => {
    const throttle = new FailedAuthThrottle(1, 10_000, 10);
    for (let i = 0; i < 1000; i++) throttle.recordFailure(`a${i}`, 0);
    assert.equal(throttle.blockedForSeconds('a999', 0), 10);
    assert.equal(throttle.blockedForSeconds('a0', 0), 0, 'the oldest were forgotten');
  });
});

describe('invalid tokens through the API', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  it('the 21st invalid token in a window is 429 without a lookup; a real key still passes', async () => {
    const t = await createTestApp(db);
    const real = await keySender(t, { scopes: ['endpoints:read'] });
    assert.equal((await real.send('GET', '/v1/endpoints')).status, 200);
    const bad = (i: number) =>
      t.send('GET', '/v1/endpoints', undefined, { authorization: `Bearer hp_guess_${i}` });
    for (let i = 0; i < FAILURES_PER_WINDOW; i++) assert.equal((await bad(i)).status, 401);
    const refused = await bad(FAILURES_PER_WINDOW);
    assert.equal(refused.status, 429);
    assert.equal((await refused.json()).error.code, 'too_many_auth_failures');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    for (let i = 100; i < 110; i++) assert.equal((await bad(i)).status, 429);
    // A key this process has never looked up is not looked up now: the address waits, as a
    // guesser's does (were it looked up, it would pass).
    const unseen = await keySender(t, { scopes: ['endpoints:read'] });
    assert.equal((await unseen.send('GET', '/v1/endpoints')).status, 429);
    assert.equal(
      (await real.send('GET', '/v1/endpoints')).status,
      200,
      'a key this process knows still passes',
    );
  });
});
