/** The start banner's quick start: it says how to allow local targets when they are refused. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printBanner } from '../../src/banner.js';
import { testConfig } from '../helpers.js';

function banner(env: Record<string, string>): string {
  let out = '';
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string) => {
    out += chunk;
    return true;
  }) as typeof process.stdout.write;
  try {
    printBanner(testConfig(env), { token: 'x', source: 'environment', generated: false });
  } finally {
    process.stdout.write = write;
  }
  return out;
}

describe('start banner', () => {
  it('tells a user whose hookpost refuses 127.0.0.1 to restart with HOOKPOST_ALLOW_PRIVATE_TARGETS=true', () => {
    const refused = banner({ HOOKPOST_ALLOW_PRIVATE_TARGETS: 'false' });
    assert.match(refused, /First restart with HOOKPOST_ALLOW_PRIVATE_TARGETS=true/);
    assert.match(refused, /http:\/\/127\.0\.0\.1:9000\//);
    const allowed = banner({});
    assert.doesNotMatch(allowed, /First restart/);
    assert.match(allowed, /HOOKPOST_ALLOW_PRIVATE_TARGETS=true: endpoints may be on 127\.0\.0\.1/);
    assert.match(allowed, /TOKEN=\$HOOKPOST_ADMIN_TOKEN/);
  });
});
