/**
 * bin/hookpost.js in a source checkout: compiles on the first run, starts without compiling when
 * dist/ is current (so a second `npm start` answers at once), recompiles after src/ changed (a
 * `git pull`) instead of running stale code, and without TypeScript or a build says what to run
 * instead of printing a module-not-found stack trace.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN } from './process.js';

const ROOT = path.resolve(path.dirname(BIN), '..');

function run(dir: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(dir, 'bin/hookpost.js'), ...args],
      { cwd: dir },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A copy of the checkout's sources (no dist/); node_modules linked when `withModules`. */
async function checkout(
  tmp: string,
  name: string,
  withModules: boolean,
  withSources = true,
): Promise<string> {
  const dir = path.join(tmp, name);
  await cp(path.join(ROOT, 'bin'), path.join(dir, 'bin'), { recursive: true });
  await cp(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  if (withSources) {
    await cp(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
    // Only src/: the launcher needs dist/src, and compiling the tests too would only cost time.
    const tsconfig = JSON.parse(await readFile(path.join(ROOT, 'tsconfig.json'), 'utf8'));
    tsconfig.include = ['src/**/*.ts'];
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  }
  if (withModules) await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

describe('bin/hookpost.js in a source checkout', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'hookpost-launcher-'));
  });
  after(async () => rm(tmp, { recursive: true, force: true }));

  it('compiles once, then runs dist/ as it is until src/ changes', async () => {
    const dir = await checkout(tmp, 'full', true);
    const first = await run(dir, ['--version']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /first run: compiling/);
    assert.match(first.stdout, /^hookpost \d+\.\d+\.\d+\n$/);

    const second = await run(dir, ['--version']);
    assert.equal(second.code, 0);
    assert.equal(second.stderr, '', 'no build when nothing changed');

    // A pull that changes a source file: the next run must not use the old dist/.
    const main = path.join(dir, 'src/main.ts');
    await writeFile(
      main,
      (await readFile(main, 'utf8')).replace('write(`hookpost ', 'write(`(pulled) hookpost '),
    );
    const later = new Date(Date.now() + 5000);
    await utimes(main, later, later);
    const third = await run(dir, ['--version']);
    assert.equal(third.code, 0, third.stderr);
    assert.match(third.stderr, /src\/ changed since the last build: compiling/);
    assert.match(third.stdout, /\(pulled\)/);
  });

  it('without TypeScript or a build: what to run, no stack trace', async () => {
    const bare = await checkout(tmp, 'bare', false);
    const result = await run(bare, ['start']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /TypeScript is not installed: run `npm ci`, then `npm run build`/);
    assert.doesNotMatch(result.stderr, /ERR_MODULE_NOT_FOUND|\n\s+at /);
    const installed = await checkout(tmp, 'installed', false, false);
    const missing = await run(installed, ['start']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /dist\/src\/main\.js is missing/);
    assert.doesNotMatch(missing.stderr, /ERR_MODULE_NOT_FOUND|\n\s+at /);
  });
});
