/**
 * The exit guard (src/exit-guard.ts), in real child processes: one that something still holds open
 * after its shutdown exits anyway, naming what was open; one whose shutdown hangs exits with 1 at
 * the deadline; one with nothing open exits at once, not held by the guard's timers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const guard = pathToFileURL(path.resolve(here, '../src/exit-guard.js')).href;
const logModule = pathToFileURL(path.resolve(here, '../src/log.js')).href;

/** Runs `body` in a fresh Node process with `guard` and `log` in scope; its exit code, output and run time. */
function run(body: string): Promise<{ code: number | null; out: string; ms: number }> {
  const script = `
    import * as guard from ${JSON.stringify(guard)};
    import { createLogger } from ${JSON.stringify(logModule)};
    import net from 'node:net';
    const log = createLogger('info');
    ${body}`;
  const started = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  // A process the guard failed to end is killed here and reported with code null.
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, ms: Date.now() - started });
    }),
  );
}

describe('exit guard', () => {
  it('exits with the shutdown’s code when something is still open after it, naming what', async () => {
    const { code, out } = await run(`
      net.createServer().listen(0, '127.0.0.1'); // left open: without the guard this never exits
      guard.exitIfStillRunning(3, log, 200);`);
    assert.equal(code, 3, out);
    assert.match(out, /still running after shutdown/);
    assert.match(out, /TCPServerWrap/);
  });

  it('exits with 1 when the shutdown does not finish in time', async () => {
    const { code, out } = await run(`
      net.createServer().listen(0, '127.0.0.1');
      guard.exitIfShutdownHangs(log, 200);
      await new Promise(() => {}); // a step that never ends`);
    assert.equal(code, 1, out);
    assert.match(out, /shutdown did not finish in time/);
  });

  it('keeps nothing alive itself: a process with nothing open exits at once, with its own code', async () => {
    const { code, out, ms } = await run(`
      guard.exitIfShutdownHangs(log, 60_000);
      guard.exitIfStillRunning(0, log, 60_000);
      process.exitCode = 4;`);
    assert.equal(code, 4, out);
    assert.doesNotMatch(out, /exiting/);
    assert.ok(ms < 15_000, `exited after ${ms} ms`);
  });
});
