/**
 * The claim loop's pacing after a wake-up (claim-pacer.ts), on an injected clock: at a low rate a
 * wake-up waits for a few rows' worth, never more than the linger bound; at 1,000/s it waits a
 * few milliseconds at most; after a quiet spell, not at all.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLAIM_LINGER_MS, ClaimPacer } from '../../src/dispatch/claim-pacer.js';

/** Claims every `everyMs` of `rows` rows for `seconds`; returns the time of the last one. */
function steady(pacer: ClaimPacer, everyMs: number, rows: number, seconds: number): number {
  let t = 0;
  for (; t <= seconds * 1000; t += everyMs) pacer.claimed(t, rows);
  return t - everyMs;
}

describe('ClaimPacer', () => {
  it('claims at once before any claim was made', () => {
    assert.equal(new ClaimPacer().waitAfterWakeUp(1000), 0);
  });

  it('at 200/s a wake-up right after a claim waits until the linger bound after it', () => {
    const pacer = new ClaimPacer();
    const last = steady(pacer, 10, 2, 5); // 2 rows each 10 ms: 200 rows/s
    // 4 rows take 20 ms at 200/s: the bound
    assert.equal(pacer.waitAfterWakeUp(last + 5), CLAIM_LINGER_MS - 5);
    assert.equal(pacer.waitAfterWakeUp(last + CLAIM_LINGER_MS), 0);
  });

  it('at 1,000/s waits only for about four rows', () => {
    const pacer = new ClaimPacer();
    const last = steady(pacer, 10, 10, 5); // 1,000 rows/s
    const wait = pacer.waitAfterWakeUp(last + 1);
    assert.ok(wait >= 2 && wait <= 4, `waited ${wait} ms`);
    assert.equal(pacer.waitAfterWakeUp(last + 3), 0, 'a wait under 2 ms is not taken');
  });

  it('at 3,000/s never waits', () => {
    const pacer = new ClaimPacer();
    const last = steady(pacer, 10, 30, 5);
    assert.equal(pacer.waitAfterWakeUp(last), 0);
  });

  it('after a quiet spell a lone event is claimed at once', () => {
    const pacer = new ClaimPacer();
    const last = steady(pacer, 10, 1, 2);
    pacer.claimed(last + 5000, 0); // the poll's empty claim
    assert.equal(pacer.waitAfterWakeUp(last + 5000 + CLAIM_LINGER_MS + 1), 0);
    assert.equal(pacer.waitAfterWakeUp(last + 30_000), 0);
  });

  it('follows a rate that rises within about a second', () => {
    const pacer = new ClaimPacer();
    steady(pacer, 10, 2, 5);
    let t = 5000;
    for (; t <= 6500; t += 10) pacer.claimed(t, 30); // now 3,000/s
    assert.equal(pacer.waitAfterWakeUp(t - 10), 0);
  });
});
