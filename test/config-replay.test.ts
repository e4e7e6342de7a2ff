import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig: replay pacing', () => {
  it('defaults to batches of 100 at 50 deliveries/s', () => {
    const c = loadConfig({});
    assert.equal(c.replayBatchSize, 100);
    assert.equal(c.replayRatePerSecond, 50);
    const tuned = loadConfig({ HOOKPOST_REPLAY_BATCH_SIZE: '10', HOOKPOST_REPLAY_RATE_PER_SECOND: '0.5' });
    assert.deepEqual([tuned.replayBatchSize, tuned.replayRatePerSecond], [10, 0.5]);
  });

  it('refuses values that would stall or flood, naming the variable', () => {
    const cases: [string, string][] = [
      ['HOOKPOST_REPLAY_BATCH_SIZE', '0'],
      ['HOOKPOST_REPLAY_BATCH_SIZE', '2.5'],
      ['HOOKPOST_REPLAY_BATCH_SIZE', '10001'],
      ['HOOKPOST_REPLAY_RATE_PER_SECOND', '0'],
      ['HOOKPOST_REPLAY_RATE_PER_SECOND', '-1'],
      ['HOOKPOST_REPLAY_RATE_PER_SECOND', 'fast'],
    ];
    for (const [name, value] of cases) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (e: Error) => e instanceof ConfigError && e.message.includes(name),
        `${name}=${value}`,
      );
    }
  });
});

describe('loadConfig: dead-letter pattern thresholds', () => {
  it("defaults to seed 004's numbers and refuses nonsense, naming the variable", () => {
    assert.equal(loadConfig({}).deadLetterPatterns.clusterCount, 50);
    assert.equal(loadConfig({ HOOKPOST_DLQ_DOMINANT_SHARE: '0.8' }).deadLetterPatterns.dominantShare, 0.8);
    for (const [name, value] of [
      ['HOOKPOST_DLQ_CLUSTER_COUNT', '0'],
      ['HOOKPOST_DLQ_CLUSTER_COUNT', '2.5'],
      ['HOOKPOST_DLQ_DOMINANT_SHARE', '1.5'],
      ['HOOKPOST_DLQ_DOMINANT_SHARE', '0'],
      ['HOOKPOST_DLQ_DRIP_MAX_PER_DAY', 'few'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (e: Error) => e instanceof ConfigError && e.message.includes(name),
        `${name}=${value}`,
      );
    }
  });
});
