import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createProgress } from '../../src/cli/progress.js';
import { replayFilterFromArgs } from '../../src/cli/replay.js';
import { parseTimeArg } from '../../src/cli/time-arg.js';
import { UsageError } from '../../src/cli/usage-error.js';

const now = new Date('2026-05-10T12:00:00.000Z');

describe('CLI arguments for replay', () => {
  it('reads times as ISO with a zone, a date, or an age', () => {
    assert.equal(parseTimeArg('since', '2026-05-01T10:00:00+02:00', now), '2026-05-01T08:00:00.000Z');
    assert.equal(parseTimeArg('since', '2026-05-01', now), '2026-05-01T00:00:00.000Z');
    assert.equal(parseTimeArg('since', '6h', now), '2026-05-10T06:00:00.000Z');
    assert.equal(parseTimeArg('since', '2d', now), '2026-05-08T12:00:00.000Z');
    assert.equal(parseTimeArg('since', '90m', now), '2026-05-10T10:30:00.000Z');
    for (const bad of ['2026-05-01T10:00:00', 'yesterday', '6x', '', '2026-13-45']) {
      assert.throws(() => parseTimeArg('since', bad, now), UsageError, bad);
    }
  });

  it('requires --endpoint and checks every option', () => {
    assert.throws(() => replayFilterFromArgs({}, now), /--endpoint/);
    assert.throws(() => replayFilterFromArgs({ endpoint: 'ep_1', limit: '0' }, now), /--limit/);
    assert.throws(() => replayFilterFromArgs({ endpoint: 'ep_1', limit: '2.5' }, now), /--limit/);
    assert.throws(
      () => replayFilterFromArgs({ endpoint: 'ep_1', 'status-code': '99' }, now),
      /--status-code/,
    );
    assert.throws(() => replayFilterFromArgs({ endpoint: 'ep_1', since: '1h', until: '2h' }, now), /--until/);
    assert.deepEqual(replayFilterFromArgs({ endpoint: 'ep_1', since: '1d', limit: '10' }, now), {
      tenantId: null,
      operations: true,
      endpointId: 'ep_1',
      since: '2026-05-09T12:00:00.000Z',
      until: undefined,
      errorClass: undefined,
      statusCode: undefined,
      limit: 10,
    });
  });
});

describe('progress display', () => {
  it('draws a bar in place on a terminal and plain lines elsewhere', () => {
    let tty = '';
    const bar = createProgress({ isTTY: true, write: (t: string) => (tty += t) }, 4, 'replayed');
    bar.update(2);
    bar.update(4);
    bar.finish();
    assert.ok(tty.includes(`\r\u001b[2K[${'█'.repeat(15)}${'░'.repeat(15)}] replayed 2/4 (50%)`), tty);
    assert.match(tty, /replayed 4\/4 \(100%\)\n$/);
    let plain = '';
    const lines = createProgress({ isTTY: false, write: (t: string) => (plain += t) }, 4, 'replayed');
    lines.update(1);
    lines.update(2); // within the same second: not printed
    lines.update(4);
    lines.finish();
    assert.equal(plain, 'replayed 1/4 (25%)\nreplayed 4/4 (100%)\n');
  });
});
