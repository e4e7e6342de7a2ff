/** CLI polish: --version, a usage error shows that command's help, --help describes first. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BIN, runHookpost } from './process.js';

const version = JSON.parse(readFileSync(path.join(path.dirname(BIN), '..', 'package.json'), 'utf8')).version;

async function run(args: string[]) {
  const proc = runHookpost(args, {});
  const code = await proc.exited;
  return { code, output: proc.output() };
}

describe('hookpost CLI usage', () => {
  it('--version prints the package version', async () => {
    for (const flag of ['--version', '-V']) {
      const { code, output } = await run([flag]);
      assert.equal(code, 0);
      assert.equal(output, `hookpost ${version}\n`);
    }
  });

  it("a usage error prints that command's help, not the list of commands", async () => {
    for (const [args, command] of [
      [['replay', '--bogus'], 'replay'],
      [['dead-letters', '--hours'], 'dead-letters'],
      [['bench', '--n', 'many'], 'bench'],
      [['migrate', 'extra'], 'migrate'],
    ] as const) {
      const { code, output } = await run([...args]);
      assert.equal(code, 2, output);
      assert.match(output, new RegExp(`^hookpost: .+\\n\\nhookpost ${command} — `), output);
      assert.match(output, new RegExp(`Usage: hookpost ${command}`));
      assert.doesNotMatch(output, /Commands:/);
    }
    const unknown = await run(['nope']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.output, /unknown command: nope[\s\S]*Commands:/);
  });

  it('--help puts the description before the options', async () => {
    const { code, output } = await run(['replay', '--help']);
    assert.equal(code, 0);
    const description = output.indexOf("requeue an endpoint's dead letters");
    const options = output.indexOf('--since, --until');
    assert.ok(description >= 0 && options > description, output);
    assert.match(output, /^hookpost replay — /);
  });
});
