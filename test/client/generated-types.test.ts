/**
 * The client's generated types match the API as it is now: regenerated in-process from the same
 * document /openapi.json serves, any difference from the committed file fails with the command
 * that fixes it. Also: the generation is deterministic, and the client package's runtime
 * dependency is the version the root installs (so installing the packed client resolves it from
 * the npm cache the root install filled).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  committedClientTypes,
  GENERATE_COMMAND,
  GENERATED_PATH,
  generateClientTypes,
  repositoryRoot,
} from '../../clients/typescript/scripts/generate.js';

/** The first differing line, so the failure says where the drift is without a 3,000-line diff. */
function firstDifference(a: string, b: string): string {
  const left = a.split('\n');
  const right = b.split('\n');
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    if (left[i] !== right[i]) {
      return `line ${i + 1}:\n  committed: ${left[i] ?? '(end of file)'}\n  generated: ${right[i] ?? '(end of file)'}`;
    }
  }
  return 'none';
}

describe('@hookpost/client generated types', () => {
  it('match the API (regenerated from the OpenAPI document)', async () => {
    const generated = await generateClientTypes();
    const committed = await committedClientTypes();
    assert.ok(
      committed === generated,
      `${GENERATED_PATH} is out of date with the API: run \`${GENERATE_COMMAND}\` and commit the result ` +
        `(first difference at ${firstDifference(committed, generated)})`,
    );
  });

  it('are generated deterministically: sorted, the same text twice, no timestamp', async () => {
    const [a, b] = [await generateClientTypes(), await generateClientTypes()];
    assert.equal(a, b);
    assert.doesNotMatch(a, /\b20\d\d-\d\d-\d\dT/, 'no generation date in the file');
    const paths = [...a.matchAll(/^ {4}"(\/[^"]*)": \{$/gm)].map((m) => m[1]!);
    assert.ok(paths.includes('/v1/deliveries') && paths.includes('/v1/endpoints/{id}'));
    assert.deepEqual(
      paths,
      [...paths].sort((x, y) => x.localeCompare(y)),
      'paths in sorted order',
    );
  });

  it("has hookpost's version and pins its runtime dependency to the version the root installs", async () => {
    const root = repositoryRoot();
    const read = async (file: string) => JSON.parse(await readFile(path.join(root, file), 'utf8'));
    const client = await read('clients/typescript/package.json');
    const rootPackage = await read('package.json');
    assert.equal(
      client.version,
      rootPackage.version,
      'the client is versioned with the API it was generated from',
    );
    assert.deepEqual(Object.keys(client.dependencies), ['openapi-fetch'], 'one runtime dependency');
    assert.equal(client.dependencies['openapi-fetch'], rootPackage.devDependencies['openapi-fetch']);
  });
});
