/**
 * The suite leaves nothing in /tmp. The runner (run-tests.ts) gives the tests their own TMPDIR
 * and fails on whatever is left in it; this proves that check fails, and that no test or source
 * file writes to a hard-coded /tmp path, which would escape it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const DIST_TEST = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(DIST_TEST, '../..');

function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(DIST_TEST, 'run-tests.js'), ...args], {
      // Without NODE_TEST_CONTEXT: set by the runner around us, it makes a nested `node --test` skip.
      env: { ...process.env, NODE_TEST_CONTEXT: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('exit', (code) => resolve({ code: code ?? 1, out }));
  });
}

describe('temp files', () => {
  it('the runner fails, naming the file, when a test leaves one behind', async () => {
    const fixture = path.join(DIST_TEST, 'fixtures', 'leaks-a-temp-file.js');
    // The fixture needs no database: point the runner at the one this run uses, so it starts none.
    const { code, out } = await run([fixture], { DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'unused' });
    assert.equal(code, 1, out);
    assert.match(out, /# pass 1/);
    assert.match(out, /left 1 file\(s\) in their temp dir/);
    assert.match(out, /hookpost-forgotten\.txt/);
  });

  it('no source or test file names a path under /tmp (it would escape the runner’s TMPDIR)', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith('.ts') && /['"`]\/tmp\//.test(readFileSync(path.join(ROOT, file), 'utf8'))) {
          offenders.push(file);
        }
      }
    };
    walk('src');
    walk('test');
    assert.deepEqual(offenders, []);
  });
});
