/** The retention variables: defaults, fractions, and bad values stopping the process with the name. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('retention configuration', () => {
  it('defaults to 30 days, payloads the same, daily partitions', () => {
    const config = loadConfig({});
    assert.equal(config.retentionDays, 30);
    assert.equal(config.payloadRetentionDays, 30);
    assert.equal(config.partitionIntervalSeconds, 86400);
    assert.equal(loadConfig({ HOOKPOST_RETENTION_DAYS: '7' }).payloadRetentionDays, 7);
    assert.equal(loadConfig({ HOOKPOST_RETENTION_DAYS: '0.0005' }).retentionDays, 0.0005);
  });

  it('refuses bad values, naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ HOOKPOST_RETENTION_DAYS: '0' }, /HOOKPOST_RETENTION_DAYS/],
      [{ HOOKPOST_PAYLOAD_RETENTION_DAYS: 'soon' }, /HOOKPOST_PAYLOAD_RETENTION_DAYS/],
      [{ HOOKPOST_PARTITION_INTERVAL_SECONDS: '1.5' }, /HOOKPOST_PARTITION_INTERVAL_SECONDS/],
      [{ HOOKPOST_RETENTION_BATCH_SIZE: '50000' }, /HOOKPOST_RETENTION_BATCH_SIZE/],
      // Partitions would run out between two passes.
      [
        {
          HOOKPOST_PARTITION_INTERVAL_SECONDS: '10',
          HOOKPOST_PARTITIONS_AHEAD: '3',
          HOOKPOST_RETENTION_INTERVAL_SECONDS: '60',
        },
        /HOOKPOST_RETENTION_INTERVAL_SECONDS/,
      ],
    ];
    for (const [env, message] of cases)
      assert.throws(
        () => loadConfig(env),
        (e: Error) => e instanceof ConfigError && message.test(e.message),
      );
  });
});
