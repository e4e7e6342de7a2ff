/** Starting real hookpost processes for end-to-end tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bin/hookpost.js');

/**
 * HOOKPOST_DATA_DIR for processes that use DATABASE_URL: nothing may be written there, and if
 * something is, it lands in the test run's TMPDIR, whose leftovers fail the run.
 */
export const UNUSED_DATA_DIR = path.join(os.tmpdir(), 'hookpost-unused');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/** How long a stopped process may take to exit (its steps are bounded by HOOKPOST_SHUTDOWN_TIMEOUT_MS, 20 s by default, and a few seconds more). */
const STOP_TIMEOUT_MS = 45_000;

export interface HookpostProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves when the output contains `text`. */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<string>;
  /** Sends a signal and resolves with the exit code; throws if the process has not exited in 45 s. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * Runs `hookpost <args>` with exactly the given environment (plus PATH). `detached` gives it its
 * own process group, so a test can signal the group as a terminal's Ctrl-C does.
 */
export function runHookpost(
  args: string[],
  env: Record<string, string>,
  options: { detached?: boolean } = {},
): HookpostProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    async waitForOutput(text, timeoutMs = 30000) {
      const deadline = Date.now() + timeoutMs;
      const matches = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      while (!matches()) {
        if (child.exitCode !== null) throw new Error(`hookpost exited (${child.exitCode}):\n${out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(text)}:\n${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return out;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return exited;
      child.kill(signal);
      // A shutdown that never ends is a failure to report, not a test run that hangs.
      let hung = false;
      const timer = setTimeout(() => {
        hung = true;
        child.kill('SIGKILL');
      }, STOP_TIMEOUT_MS);
      const code = await exited;
      clearTimeout(timer);
      if (hung)
        throw new Error(
          `hookpost had not exited ${STOP_TIMEOUT_MS} ms after ${signal}:\n${out.slice(-8000)}`,
        );
      return code;
    },
  };
}

/**
 * Resolves once `hp` prints that it listens. A process that does not get there is killed before
 * the error is thrown: a caller that gets only the error never held it to stop it.
 */
export async function untilListening(hp: HookpostProcess, timeoutMs = 60000): Promise<void> {
  try {
    await hp.waitForOutput('hookpost is listening on', timeoutMs);
  } catch (error) {
    await hp.stop('SIGKILL');
    throw error;
  }
}
