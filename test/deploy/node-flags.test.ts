/**
 * hookpost's processes run with the node flags of src/node-flags.ts wherever the project starts
 * them: `npm start`, the Docker image and the bench's API and dispatchers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { benchNodeArgs } from '../../src/bench/harness.js';
import { NODE_FLAGS } from '../../src/node-flags.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe('node flags', () => {
  it('are the same for npm start, the Docker image and the bench', () => {
    assert.ok(NODE_FLAGS.length > 0);
    const start = JSON.parse(read('package.json')).scripts.start as string;
    assert.equal(start, ['node', ...NODE_FLAGS, 'bin/hookpost.js', 'start'].join(' '));
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    assert.ok(entrypoint, 'the Dockerfile has an exec-form ENTRYPOINT');
    assert.deepEqual(JSON.parse(entrypoint), ['node', ...NODE_FLAGS, 'bin/hookpost.js']);
    assert.deepEqual(benchNodeArgs().slice(0, NODE_FLAGS.length), [...NODE_FLAGS]);
  });

  it('are accepted by this node and reach the process', () => {
    const out = execFileSync(process.execPath, [...NODE_FLAGS, '-p', 'JSON.stringify(process.execArgv)'], {
      encoding: 'utf8',
    });
    assert.deepEqual((JSON.parse(out) as string[]).slice(0, NODE_FLAGS.length), [...NODE_FLAGS]);
    const version = execFileSync(
      process.execPath,
      [...NODE_FLAGS, path.join(ROOT, 'bin/hookpost.js'), '--version'],
      {
        encoding: 'utf8',
      },
    );
    assert.match(version, /\d+\.\d+\.\d+/);
  });
});
