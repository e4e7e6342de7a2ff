/**
 * The README's quick start, run as printed: the code block is read out of README.md and run by
 * bash against a real `hookpost start`, once with HOOKPOST_ALLOW_PRIVATE_TARGETS=true (a
 * delivery arrives verified; a second run reuses the endpoint) and once without it (it stops at
 * once, says how to restart hookpost, and sends nothing). Only the two ports are swapped for free
 * ones: other test files and other people's hookposts may hold 8080 and 9000.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { quickStartLines } from '../../src/banner.js';
import { createTestDatabase, type TestDatabase, waitFor } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { BIN, freePort, type HookpostProcess, runHookpost } from './process.js';

const ROOT = path.resolve(path.dirname(BIN), '..');

/** The sh block of README.md that starts `hookpost listen` (the quick start's second terminal). */
async function readmeQuickStart(): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const found = blocks.filter((b) => b.includes(' listen '));
  assert.equal(found.length, 1, 'one quick-start block in README.md');
  return found[0]!.trimEnd();
}

/** The block with the API and receiver ports replaced; each must occur where the README has it. */
function onPorts(block: string, apiPort: number, listenPort: number): string {
  const swapped = block
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${apiPort}`)
    .replaceAll('9000', String(listenPort));
  assert.equal(block.split('127.0.0.1:8080').length - 1, 1, 'the API address once');
  assert.equal(block.split('9000').length - 1, 2, 'the receiver port twice');
  return swapped;
}

interface ShellRun {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** `bash -c block` in `cwd`, in its own process group so the receiver it leaves running can be stopped. */
function runShell(block: string, cwd: string): ShellRun {
  const child = spawn('bash', ['-c', block], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, TMPDIR: os.tmpdir() },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return { child, output: () => out, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

/** Stops what the block left running (the receiver) by signalling its process group. */
function stopGroup(run: ShellRun): void {
  try {
    process.kill(-run.child.pid!, 'SIGTERM');
  } catch {
    // already gone
  }
}

describe('the README quick start, as printed', {
  skip: skipUnlessInstalled(['bash', 'curl'], 'apt-get install -y bash curl'),
}, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  /** A real `hookpost start` whose data dir is `<folder>/.hookpost`, as after `npm start` there. */
  async function start(env: Record<string, string>) {
    const db: TestDatabase = await createTestDatabase();
    const folder = await mkdtemp(path.join(os.tmpdir(), 'hookpost-quickstart-'));
    // `node bin/hookpost.js` as the README runs it, from the folder where hookpost was started.
    await symlink(path.join(ROOT, 'bin'), path.join(folder, 'bin'));
    const port = await freePort();
    const server: HookpostProcess = runHookpost(['start'], {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOOKPOST_DATA_DIR: path.join(folder, '.hookpost'),
      HOOKPOST_POLL_INTERVAL_MS: '200',
      ...env,
    });
    cleanups.push(async () => {
      await server.stop('SIGTERM');
      await db.drop();
      await rm(folder, { recursive: true, force: true });
    });
    await server.waitForOutput('hookpost is listening');
    return { folder, port, server };
  }

  it('is the banner’s quick start', async () => {
    const lines = quickStartLines(
      'http://127.0.0.1:8080',
      '$(cat .hookpost/admin-token)',
      'node bin/hookpost.js',
    );
    assert.equal(await readmeQuickStart(), lines.join('\n'));
  });

  it('with HOOKPOST_ALLOW_PRIVATE_TARGETS=true: a delivery arrives verified; run again, the endpoint is reused', async () => {
    const { folder, port } = await start({ HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true' });
    const block = onPorts(await readmeQuickStart(), port, await freePort());

    // GET / (the address the banner prints) leads to the admin page.
    const home = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
    assert.equal(home.status, 302);
    assert.equal(home.headers.get('location'), '/ui');

    for (const round of ['created', 'reused (secret rotated)']) {
      const run = runShell(block, folder);
      cleanups.push(async () => stopGroup(run));
      await waitFor(`round ${round}: the delivery verified at hookpost listen`, () =>
        /msg_\w+ {2}order\.created {2}verified {2}51 bytes/.test(run.output()),
      );
      const out = run.output();
      assert.match(
        out,
        new RegExp(`endpoint ep_\\w+ ${round.replace(/[()]/g, '\\$&')} for http://127\\.0\\.0\\.1:\\d+/`),
      );
      assert.match(out, /"deliveries":\[\{"id":"dlv_\w+","endpoint_id":"ep_\w+","status":"pending"\}\]/);
      assert.doesNotMatch(out, /NOT VERIFIED/);
      assert.equal(await run.exited, 0, out);
      stopGroup(run);
    }
  });

  it('without it: stops at once, says how to restart hookpost, and sends nothing', async () => {
    const { folder, port, server } = await start({});
    const block = onPorts(await readmeQuickStart(), port, await freePort());
    const run = runShell(block, folder);
    cleanups.push(async () => stopGroup(run));
    // An end, not a speed: before the fix this block looped for ever.
    const code = await Promise.race([
      run.exited,
      new Promise((r) => setTimeout(() => r('still running'), 60_000)),
    ]);
    const out = run.output();
    assert.equal(code, 0, out);
    assert.match(out, /refuses endpoints on 127\.0\.0\.1/);
    assert.match(out, /HOOKPOST_ALLOW_PRIVATE_TARGETS=true npm start/);
    assert.doesNotMatch(out, /message_id/, 'nothing was sent');
    // The receiver is gone too: nothing is left listening.
    assert.throws(() => process.kill(-run.child.pid!, 0));
    assert.doesNotMatch(server.output(), /"level":50|fatal/);
  });
});
