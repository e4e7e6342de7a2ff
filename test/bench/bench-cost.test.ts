import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runHookpost } from '../cli/process.js';

/** The cost rows of one table in the bench output: component → [CPU s, µs per delivery]. */
function costRows(output: string, title: string): Map<string, [number, number]> {
  const start = output.indexOf(title);
  assert.ok(start >= 0, `no cost table "${title}" in:\n${output}`);
  const rows = new Map<string, [number, number]>();
  for (const line of output.slice(start).split('\n').slice(2)) {
    const cells = line.trim().split(/\s{2,}/);
    if (cells.length !== 4) break;
    rows.set(cells[0]!, [Number(cells[1]!.replace(/,/g, '')), Number(cells[2]!.replace(/,/g, ''))]);
  }
  return rows;
}

describe('hookpost bench cost accounting', () => {
  it('prints CPU per delivery for every part of the queued and the ceiling run', async () => {
    const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
    assert.ok(url, 'run with npm test');
    const bench = runHookpost(['bench', '--n', '1000', '--endpoints', '2'], {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
    });
    const code = await bench.exited;
    const output = bench.output();
    assert.equal(code, 0, output);
    assert.match(output, /check {6}0 missing, 0 duplicates, 0 bad signatures/);
    const queued = costRows(output, 'queued run');
    for (const part of ['API', 'dispatcher', 'PostgreSQL', 'receiver', 'bench client']) {
      const row = queued.get(part);
      assert.ok(row, `no ${part} row in:\n${output}`);
      assert.ok(row[0] > 0 && row[1] > 0, `${part} costs nothing in:\n${output}`);
    }
    const subtotal = queued.get('hookpost (API + dispatcher + PostgreSQL)');
    assert.ok(subtotal && subtotal[1] > 0, output);
    const ceiling = costRows(output, 'ceiling run');
    for (const part of ['receiver', 'bench client']) assert.ok((ceiling.get(part)?.[1] ?? 0) > 0, output);
    // The children's log lines (here: the unset HOOKPOST_SECRET_KEY warning) come after the
    // report, under their own heading, never inside it.
    const logs = output.indexOf('  logs       the API and dispatcher processes logged');
    assert.ok(logs > output.indexOf('  ratio  '), output);
    assert.equal(output.slice(0, logs).includes('"level":'), false, output);
  });

  it('at a steady rate also prints the cost after the warm-up, over the deliveries that arrived then', async () => {
    const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
    assert.ok(url, 'run with npm test');
    const bench = runHookpost(['bench', '--rate', '200', '--duration', '7', '--endpoints', '2'], {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
    });
    const code = await bench.exited;
    const output = bench.output();
    assert.equal(code, 0, output);
    const whole = costRows(output, 'queued run');
    const steady = costRows(output, 'steady state, after 3 s of warm-up');
    for (const part of ['API', 'dispatcher', 'PostgreSQL']) {
      const [wholeCpu] = whole.get(part) ?? [0];
      const [steadyCpu, perDelivery] = steady.get(part) ?? [0, 0];
      assert.ok(steadyCpu > 0 && perDelivery > 0, `${part} in:\n${output}`);
      assert.ok(steadyCpu < wholeCpu, `the steady phase is a part of the run, for ${part}:\n${output}`);
    }
    // The steady phase is the run less its first 3 s. Compared with the whole run's wall time
    // rather than with the 7 s offered: on a busy machine the enqueue falls behind the schedule
    // and the run takes longer, the warm-up does not.
    const wallOf = (phase: string) =>
      Number(output.match(new RegExp(`${phase} → last receipt \\(([\\d.]+) s of wall time\\)`))?.[1]);
    const wholeWall = wallOf('first enqueue');
    const steadyWall = wallOf('steady state, after 3 s of warm-up');
    assert.ok(steadyWall > 2 && Math.abs(wholeWall - steadyWall - 3) < 0.5, output);
    // What the database did in that phase, per delivery (pg_stat_database; statements only where
    // pg_stat_statements is loaded).
    const transactions = Number(
      output.match(/ {2}database {3}steady state: transactions ([\d.]+) per delivery/)?.[1],
    );
    assert.ok(transactions > 0, output);
  });
});
