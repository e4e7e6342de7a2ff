/** The claim loop's sleep (src/dispatch/wake-signal.ts): wake-ups kept, and wakeAt for a retry of its own. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WakeSignal } from '../../src/dispatch/wake-signal.js';

/** Whether `sleep` ends before `ms` of the test's own patience (a far bound, not a timing). */
const endsWithin = (sleep: Promise<void>, ms: number) =>
  Promise.race([sleep.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);

describe('WakeSignal', () => {
  it('a wakeAt during a long sleep ends it at that time', async () => {
    const signal = new WakeSignal();
    const sleep = signal.sleep(600_000);
    signal.wakeAt(Date.now() + 20);
    assert.equal(await endsWithin(sleep, 10_000), true);
  });

  it('a wakeAt before a sleep shortens it; it is forgotten once the sleep ends', async () => {
    const signal = new WakeSignal();
    signal.wakeAt(Date.now() + 20);
    assert.equal(await endsWithin(signal.sleep(600_000), 10_000), true);
    const next = signal.sleep(600_000);
    assert.equal(await endsWithin(next, 300), false, 'the next sleep is not cut by the old wakeAt');
    signal.wake();
    await next;
  });

  it('a later wakeAt does not lengthen a sleep, and a wake() while busy is kept', async () => {
    const signal = new WakeSignal();
    const sleep = signal.sleep(20);
    signal.wakeAt(Date.now() + 600_000);
    assert.equal(await endsWithin(sleep, 10_000), true);
    signal.wake();
    assert.equal(await endsWithin(signal.sleep(600_000), 10_000), true, 'the kept wake-up');
  });
});
