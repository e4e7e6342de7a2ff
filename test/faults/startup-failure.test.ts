/**
 * A start that cannot use its database closes what it opened and exits 1 at once: pointed at a
 * hot standby alone, `hookpost start` fails its migration (25006, read-only) and used to linger
 * a minute on its pool's idle connections before exiting; listing only hosts that are not
 * primaries fails at connect. Each says what it found, without the password.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runHookpost } from '../cli/process.js';
import { TOKEN } from '../helpers.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary, startStandby } from './pg-pair.js';
import { freeFixedPort } from './ports.js';

const { tools, skip } = await preferredToolset();

describe('a start without a usable primary', { skip }, () => {
  let root: string;
  let primary: PgNode;
  let standby: PgNode;
  before(async () => {
    root = await clusterRoot('hookpost-startup-');
    primary = await startPrimary(tools!, 'a', path.join(root, 'a'), await freeFixedPort());
    standby = await startStandby(primary, 'b', path.join(root, 'b'), await freeFixedPort());
  });
  after(async () => {
    await standby?.stop();
    await primary?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const start = async (databaseUrl: string) => {
    const started = Date.now();
    const hookpost = runHookpost(['start'], {
      DATABASE_URL: databaseUrl,
      PORT: String(await freeFixedPort()),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_DATA_DIR: path.join(root, 'hookpost'),
    });
    const timer = setTimeout(() => hookpost.child.kill('SIGKILL'), 30000);
    const code = await hookpost.exited;
    clearTimeout(timer);
    return { code, ms: Date.now() - started, output: hookpost.output() };
  };

  it('a hot standby alone: the migration is refused, exit 1 at once, saying it is read-only', async () => {
    const url = standby.url().replace('postgres@', 'postgres:not-the-password@');
    const { code, ms, output } = await start(url);
    console.log(`# a standby alone: exit ${code} after ${ms} ms`);
    assert.equal(code, 1, output);
    assert.match(output, /read-only/);
    assert.doesNotMatch(output, /not-the-password/);
    // The pool's idle connections kept the process for their 60 s timeout; the bound is loose
    // for a busy machine, the point is that nothing waits.
    assert.ok(ms < 20000, `exited after ${ms} ms`);
  });

  it('several hosts, none a primary: exit 1 at once, naming each', async () => {
    const dead = await freeFixedPort();
    const { code, ms, output } = await start(
      `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${dead}/postgres`,
    );
    console.log(`# no primary among the hosts: exit ${code} after ${ms} ms`);
    assert.equal(code, 1, output);
    assert.match(output, /session is read-only/);
    assert.match(output, new RegExp(`127\\.0\\.0\\.1:${dead}`));
    assert.ok(ms < 20000, `exited after ${ms} ms`);
  });
});
