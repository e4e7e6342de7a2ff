import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { summarizeOutcomes } from '../../src/endpoints/breaker.js';
import { BUCKET_COUNT, bucketIndex, histogramQuantile } from '../../src/endpoints/latency.js';

function histogram(samples: number[]): number[] {
  const buckets = new Array(BUCKET_COUNT).fill(0);
  for (const s of samples) buckets[bucketIndex(s)]++;
  return buckets;
}

describe('latency histograms', () => {
  it('estimates percentiles within 12.5% of the exact value', () => {
    const samples = Array.from({ length: 10_000 }, (_, i) => 5 + ((i * 7919) % 3000));
    const sorted = [...samples].sort((a, b) => a - b);
    const buckets = histogram(samples);
    for (const q of [0.5, 0.95, 0.99]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
      const estimate = histogramQuantile(buckets, q)!;
      assert.ok(Math.abs(estimate - exact) / exact < 0.125, `q=${q}: ${estimate} vs ${exact}`);
    }
  });

  it('is null for an empty histogram and puts very slow samples in the last bucket', () => {
    assert.equal(histogramQuantile(new Array(BUCKET_COUNT).fill(0), 0.5), null);
    assert.equal(bucketIndex(10_000_000), BUCKET_COUNT - 1);
    assert.equal(bucketIndex(0), 0);
  });
});

describe('breaker outcome summaries', () => {
  it('counts failures after the last success; 4xx are neutral', () => {
    const s = summarizeOutcomes([
      { endpointId: 'a', outcome: 'retryable' },
      { endpointId: 'a', outcome: 'success' },
      { endpointId: 'a', outcome: 'retryable' },
      { endpointId: 'a', outcome: 'permanent' },
      { endpointId: 'a', outcome: 'retryable' },
      { endpointId: 'b', outcome: 'permanent' },
    ]);
    assert.deepEqual(s, [{ endpointId: 'a', hadSuccess: true, trailingFailures: 2, failures: 3 }]);
  });
});
