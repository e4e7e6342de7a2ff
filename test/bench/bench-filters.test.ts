/**
 * `hookpost bench --filters` and `--filter-cost` run at a small size and check themselves: every
 * delivery a filter let through arrives, none it kept back does, and the filtered lists match.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runHookpost } from '../cli/process.js';

const url = () => {
  const u = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  assert.ok(u, 'run with npm test');
  return u;
};

describe('hookpost bench with filters', () => {
  it('--filters fans each event out to every endpoint, half of them filtered, and checks the result', async () => {
    const bench = runHookpost(['bench', '--filters', '--n', '80', '--endpoints', '4'], {
      DATABASE_URL: url(),
      LOG_LEVEL: 'warn',
    });
    const code = await bench.exited;
    const output = bench.output();
    assert.equal(code, 0, output);
    assert.match(output, /80 events, each fanned out to 4 endpoints \(2 with a three-clause filter/);
    assert.match(output, /check {6}0 missing, 0 duplicates, 0 bad signatures\n/);
    // 2 filtered endpoints × 80 events, half of which the filter keeps back.
    const filtered = Number(
      /filters {4}([\d,]+) deliveries not created by a filter, 0 events filtered wrongly/.exec(output)?.[1],
    );
    assert.ok(filtered > 40 && filtered < 120, output);
    const deliveries = Number(/: ([\d,]+) deliveries\n/.exec(output)?.[1]?.replace(/,/g, ''));
    assert.equal(deliveries + filtered, 80 * 4, output);
    assert.match(output, /per accepted event \(80\): hookpost [\d,.]+ µs, all [\d,.]+ µs/);
  });

  it('--filter-cost prints both places for each workload', async () => {
    const bench = runHookpost(['bench', '--filter-cost', '--n', '200', '--rounds', '2'], {
      DATABASE_URL: url(),
      LOG_LEVEL: 'warn',
    });
    const code = await bench.exited;
    const output = bench.output();
    assert.equal(code, 0, output);
    assert.equal(output.match(/in PostgreSQL {2}-?[\d.]+ µs/g)?.length, 3, output);
    assert.equal(output.match(/in the API {5}-?[\d.]+ µs/g)?.length, 3, output);
  });
});
