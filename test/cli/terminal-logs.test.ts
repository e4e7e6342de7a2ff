/**
 * Logs for a person at a terminal: `hookpost start` on a real pseudo-terminal (util-linux
 * `script`) writes readable lines with ISO times, none of them inside the start banner; with
 * NODE_ENV=production, or when stdout is not a terminal, it writes JSON lines.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ChildLogs } from '../../src/bench/child-logs.js';
import { readableLogLine, terminalLogs } from '../../src/log.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { BIN, freePort, runHookpost } from './process.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal colour codes are what is stripped
const ANSI = /\x1b\[[0-9;]*m/g;
const READABLE = /^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] (INFO|WARN|ERROR|DEBUG): /;

/**
 * `hookpost start` on a pseudo-terminal until its banner is out, then Ctrl-C (SIGINT): the shell
 * inside `script` waits on a line from the terminal, which the test sends once it sees the banner.
 */
async function startOnTerminal(env: Record<string, string>): Promise<string> {
  const inner = `node '${BIN}' start & pid=$!; read _; kill -INT $pid; wait $pid`;
  const child = spawn('script', ['-qec', inner, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner within 60 s:\n${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('`kill %1` stops it.')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => reject(new Error(`exited before its banner:\n${out}`)));
  });
  // Let the start-up's last log lines out, then stop it as a terminal's Ctrl-C would.
  child.stdin!.write('\n');
  assert.equal(await exited, 0, out);
  return out.replace(ANSI, '').replaceAll('\r', '');
}

describe('terminal logs', () => {
  it('readable only at a terminal outside production', () => {
    assert.equal(terminalLogs({ production: false }, { isTTY: true }), true);
    assert.equal(terminalLogs({ production: true }, { isTTY: true }), false);
    assert.equal(terminalLogs({ production: false }, { isTTY: false }), false);
    assert.equal(terminalLogs({ production: false }, {}), false);
  });

  it('a JSON line reads as time, level, message and fields; anything else is left as it is', () => {
    const line =
      '{"level":40,"time":1796301440541,"service":"hookpost","pid":1,"hostname":"h","msg":"slow","ms":12}';
    assert.equal(readableLogLine(line), '[2026-12-03T12:37:20.541Z] WARN: slow {"ms":12}');
    assert.equal(readableLogLine('not json'), 'not json');
  });

  it("the bench keeps its children's lines for after the report", async () => {
    const logs = new ChildLogs();
    const stream = new PassThrough();
    logs.collect('dispatcher', stream);
    stream.end('{"level":40,"time":1796301440541,"msg":"one"}\npartial line');
    await new Promise((r) => setImmediate(r));
    const printed: string[] = [];
    logs.print((l) => printed.push(l), true);
    assert.equal(
      printed[0],
      '  logs       the API and dispatcher processes logged 2 lines (LOG_LEVEL=warn):',
    );
    assert.match(printed[1]!.replace(ANSI, ''), /^ {13}dispatcher: \[2026-12-03T12:37:20\.541Z\] WARN: one$/);
    assert.equal(printed[2], '             dispatcher: partial line');
  });
});

describe('hookpost start at a terminal', {
  skip: skipUnlessInstalled(['script'], 'apt-get install -y bsdutils'),
}, () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db.drop();
  });
  const env = async () => ({
    DATABASE_URL: db.url,
    PORT: String(await freePort()),
    HOOKPOST_ADMIN_TOKEN: 'terminal-logs-token-0123456789',
    LOG_LEVEL: 'info',
  });

  it('writes readable lines with ISO times, none inside the banner', async () => {
    const out = await startOnTerminal(await env());
    const lines = out.split('\n');
    assert.doesNotMatch(out, /"level":/, out);
    assert.ok(
      lines.some((l) => READABLE.test(l) && l.includes('dispatcher started')),
      out,
    );
    assert.ok(
      lines.some((l) => READABLE.test(l) && l.includes('shutting down')),
      out,
    );
    const first = lines.findIndex((l) => l.startsWith('hookpost is listening on'));
    const last = lines.findIndex((l) => l.includes('`kill %1` stops it.'));
    assert.ok(first >= 0 && last > first, out);
    const inside = lines.slice(first, last + 1).filter((l) => READABLE.test(l));
    assert.deepEqual(inside, [], 'no log line inside the banner');
  });

  it('writes JSON with NODE_ENV=production, and when stdout is not a terminal', async () => {
    const production = await startOnTerminal({
      ...(await env()),
      NODE_ENV: 'production',
      HOOKPOST_SECRET_KEY: 'terminal-logs-secret-key-0123456789',
    });
    assert.match(production, /^\{"level":30,"time":\d+,.*"msg":"dispatcher started"/m);
    assert.ok(!production.split('\n').some((l) => READABLE.test(l)), production);

    const piped = runHookpost(['migrate'], { DATABASE_URL: db.url, LOG_LEVEL: 'info' });
    assert.equal(await piped.exited, 0, piped.output());
    assert.doesNotMatch(piped.output(), READABLE);
  });
});
