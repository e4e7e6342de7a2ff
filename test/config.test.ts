import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('has the contract defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.allowPrivateTargets, false);
    assert.equal(c.maxPayloadBytes, 262144);
    assert.equal(c.retryBaseSeconds, 30);
    assert.equal(c.retryCapSeconds, 3600);
    assert.equal(c.maxAttempts, 8);
    assert.equal(c.requestTimeoutMs, 15000);
    assert.equal(c.leaseSeconds, 60);
    assert.equal(c.breakerThreshold, 10);
    assert.equal(c.breakerCooldownSeconds, 300);
    assert.equal(c.breakerMaxCooldownSeconds, 3600);
    assert.equal(c.disableAfterSeconds, 432000);
    assert.equal(c.backlogLimit, 1_000_000);
    assert.equal(c.secretGraceSeconds, 86400);
    assert.equal(c.databaseUrl, undefined);
  });

  it('needs a lease longer than twice the request timeout (buffer wait + attempt)', () => {
    assert.throws(
      () => loadConfig({ HOOKPOST_LEASE_SECONDS: '20', HOOKPOST_REQUEST_TIMEOUT_MS: '15000' }),
      (e: Error) =>
        e instanceof ConfigError &&
        /HOOKPOST_LEASE_SECONDS.*twice HOOKPOST_REQUEST_TIMEOUT_MS/.test(e.message),
    );
    assert.equal(
      loadConfig({ HOOKPOST_LEASE_SECONDS: '31', HOOKPOST_REQUEST_TIMEOUT_MS: '15000' }).leaseSeconds,
      31,
    );
  });

  it('builds the retry and breaker policies once', () => {
    const c = loadConfig({ HOOKPOST_MAX_ATTEMPTS: '3', HOOKPOST_BREAKER_THRESHOLD: '4' });
    assert.deepEqual(c.policies.retry, {
      baseSeconds: 30,
      capSeconds: 3600,
      maxAttempts: 3,
      retryAfterMaxSeconds: 3600,
    });
    assert.deepEqual(c.policies.breaker, {
      threshold: 4,
      cooldownSeconds: 300,
      maxCooldownSeconds: 3600,
      disableAfterSeconds: 432000,
    });
  });

  it('accepts fractional durations', () => {
    const c = loadConfig({ HOOKPOST_RETRY_BASE_SECONDS: '0.05', HOOKPOST_RETRY_CAP_SECONDS: '0.2' });
    assert.equal(c.retryBaseSeconds, 0.05);
  });

  it('names the variable in the error for a bad value', () => {
    const cases: Record<string, string> = {
      PORT: 'eighty',
      HOOKPOST_MAX_ATTEMPTS: '2.5',
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'maybe',
      HOOKPOST_DISPATCH_CONCURRENCY: '0',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'mysql://x',
      HOOKPOST_METRICS_PORT: '70000',
      HOOKPOST_METRICS_TOKEN: 'short',
      HOOKPOST_METRICS_CACHE_SECONDS: '-1',
    };
    for (const [name, value] of Object.entries(cases)) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (e: Error) => e instanceof ConfigError && e.message.includes(name),
      );
    }
  });

  it('validates the API listener like every other variable (PORT, HOST)', () => {
    for (const port of ['99999', '0', '-1', '80.5', '65536']) {
      assert.throws(() => loadConfig({ PORT: port }), /PORT=.* is invalid: expected a TCP port, 1 to 65535/);
    }
    for (const host of ['not a host', 'http://127.0.0.1', '127.0.0.1:8080', '-bad-.example']) {
      assert.throws(() => loadConfig({ HOST: host }), /HOST=.* is invalid: expected an IP address/);
    }
    assert.equal(loadConfig({ PORT: '65535' }).port, 65535);
    for (const host of ['0.0.0.0', '::', '::1', 'localhost', 'api-1.internal']) {
      assert.equal(loadConfig({ HOST: host }).host, host);
    }
  });

  it('leaves the metrics listener off and the scrape open unless asked', () => {
    const c = loadConfig({});
    assert.equal(c.metricsPort, undefined);
    assert.equal(c.metricsToken, undefined);
    assert.equal(c.metricsCacheSeconds, 5);
    const set = loadConfig({ HOOKPOST_METRICS_PORT: '9464', HOOKPOST_METRICS_CACHE_SECONDS: '0.5' });
    assert.equal(set.metricsPort, 9464);
    assert.equal(set.metricsCacheSeconds, 0.5);
  });

  it('requires HOOKPOST_SECRET_KEY in production', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production' }), /HOOKPOST_SECRET_KEY/);
    assert.equal(
      loadConfig({ NODE_ENV: 'production', HOOKPOST_SECRET_KEY: 'k'.repeat(32) }).production,
      true,
    );
  });
});
