import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCostTable } from '../../src/bench/cost.js';
import { parseProcStat, processCpuSeconds } from '../../src/bench/proc-stat.js';

/** A real line's shape (proc(5)): fields 14–17 are utime, stime, cutime, cstime in clock ticks. */
const line = (comm: string) =>
  `4242 (${comm}) S 17 4242 4242 0 -1 4194560 1873 0 0 0 731 95 12 3 20 0 1 0 37061 ` +
  '223006720 5531 18446744073709551615 1 1 0 0 0 0 0 16781312 1 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0';

describe('parseProcStat', () => {
  it('reads pid, comm, ppid and the four CPU times', () => {
    assert.deepEqual(parseProcStat(line('postgres')), {
      pid: 4242,
      comm: 'postgres',
      ppid: 17,
      utime: 731,
      stime: 95,
      cutime: 12,
      cstime: 3,
    });
  });

  it('counts fields from the last parenthesis: comm may hold spaces and parentheses', () => {
    const parsed = parseProcStat(line('we ird) S 99 (name'));
    assert.equal(parsed.comm, 'we ird) S 99 (name');
    assert.equal(parsed.ppid, 17);
    assert.equal(parsed.utime, 731);
    assert.equal(parsed.cstime, 3);
  });

  it('rejects a line that is not a stat line, or a truncated one', () => {
    assert.throws(() => parseProcStat('hello world'));
    assert.throws(() => parseProcStat('12 (node) S 1 2 3'));
  });

  it('reads this very process, and 0 for a pid that does not exist', () => {
    let x = 0;
    for (let i = 0; i < 3e7; i++) x += i % 7; // ~50 ms of CPU, so at least a few ticks
    assert.ok(x > 0);
    assert.ok(processCpuSeconds(process.pid) > 0);
    assert.equal(processCpuSeconds(2 ** 30), 0);
  });
});

describe('formatCostTable', () => {
  it('prints µs per delivery and a hookpost subtotal after the system parts', () => {
    const lines = formatCostTable(
      [
        { name: 'API', system: true, cpuSeconds: 1 },
        { name: 'PostgreSQL', system: true, cpuSeconds: 2 },
        { name: 'receiver', system: false, cpuSeconds: 0.5 },
      ],
      10_000,
      2,
    );
    const cells = lines.map((l) => l.split(/\s{2,}/));
    assert.deepEqual(cells[0], ['component', 'CPU s', 'µs/delivery', 'cores']);
    assert.deepEqual(cells[1], ['API', '1.00', '100.0', '0.50']);
    assert.deepEqual(cells[3], ['hookpost (API + PostgreSQL)', '3.00', '300.0', '1.50']);
    assert.deepEqual(cells[4], ['receiver', '0.50', '50.0', '0.25']);
    assert.deepEqual(cells[5], ['all', '3.50', '350.0', '1.75']);
  });
});
