import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers.js';
import { freePort, runHookpost } from './process.js';

/** The quick-start lines from the banner, as a user would paste them. */
function quickStart(banner: string): string {
  const start = banner.indexOf('Quick start');
  return banner
    .slice(start)
    .split('\n')
    .slice(1)
    .filter((l) => l.startsWith('  '))
    .join('\n');
}

describe('hookpost start on the embedded PostgreSQL (no DATABASE_URL)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-start-'));
    await chmod(dataDir, 0o755);
    env = {
      HOOKPOST_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      HOOKPOST_EMBEDDED_PG_PORT: String(await freePort()),
      // The quick start delivers to hookpost listen on 127.0.0.1.
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
    };
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves the API, prints a working quick start, and keeps data and token across restarts', async () => {
    const first = runHookpost(['start'], env);
    try {
      const banner = await first.waitForOutput(/Quick start[\s\S]*kill %1[^\n]*\n/);
      assert.match(banner, /hookpost is listening on http:\/\/127\.0\.0\.1:\d+/);
      assert.match(banner, /Admin token \(generated now/);
      const mode = (await stat(path.join(dataDir, 'admin-token'))).mode & 0o777;
      assert.equal(mode, 0o600);
      assert.match(banner, /listen --port 9000 --api "\$HOOKPOST_URL" --subscribe order\.created &/);
      assert.match(banner, /HOOKPOST_ALLOW_PRIVATE_TARGETS=true: endpoints may be on 127\.0\.0\.1/);
      // Pasted as printed, but with a free port instead of 9000 (other test files run alongside).
      const listenPort = String(await freePort());
      const script = quickStart(banner)
        .replaceAll(':9000/', `:${listenPort}/`)
        .replace('--port 9000', `--port ${listenPort}`);
      const shell = spawn('bash', ['-c', `${script}\nwait`], {
        cwd: dataDir,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let shellOut = '';
      shell.stdout.on('data', (d: Buffer) => (shellOut += d));
      shell.stderr.on('data', (d: Buffer) => (shellOut += d));
      try {
        await waitFor(
          'the quick-start delivery, verified',
          () => /endpoint ep_[0-9a-f]{32} created/.test(shellOut) && /msg_\w+ {2}\S+ {2}\S/.test(shellOut),
          30000,
        );
      } finally {
        process.kill(-shell.pid!, 'SIGTERM');
      }
      assert.match(shellOut, /"message_id":"(msg_[0-9a-f]+)"/, shellOut);
      const messageId = /"message_id":"(msg_[0-9a-f]+)"/.exec(shellOut)![1];
      assert.match(shellOut, new RegExp(`${messageId} {2}order\\.created {2}verified {2}51 bytes`), shellOut);
      const ready = await fetch(`http://127.0.0.1:${env.PORT}/readyz`);
      assert.equal(ready.status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${env.PORT}/healthz`)).status, 200);
    } finally {
      assert.equal(await first.stop('SIGINT'), 0, first.output());
    }

    const second = runHookpost(['start'], env);
    try {
      const banner = await second.waitForOutput(/Quick start[\s\S]*kill %1[^\n]*\n/);
      assert.doesNotMatch(banner, /hp_[A-Za-z0-9_-]{20,}/, 'a saved token is not printed again');
      const token = (await import('node:fs')).readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
      const list = await fetch(`http://127.0.0.1:${env.PORT}/v1/deliveries`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(
        ((await list.json()) as { data: unknown[] }).data.length,
        1,
        'the delivery survived the restart',
      );
    } finally {
      assert.equal(await second.stop('SIGTERM'), 0, second.output());
    }
  });

  it('never prints a token given in the environment, and exits 1 naming a bad variable', async () => {
    const secret = 'env-token-which-must-stay-hidden';
    const proc = runHookpost(['start'], { ...env, HOOKPOST_ADMIN_TOKEN: secret });
    try {
      const banner = await proc.waitForOutput(/Quick start[\s\S]*kill %1[^\n]*\n/);
      assert.ok(!banner.includes(secret));
    } finally {
      await proc.stop();
    }
    assert.ok(!proc.output().includes(secret));
    const bad = runHookpost(['start'], { ...env, HOOKPOST_MAX_ATTEMPTS: 'many' });
    assert.equal(await bad.exited, 1);
    assert.match(bad.output(), /HOOKPOST_MAX_ATTEMPTS/);
    const usage = runHookpost(['frobnicate'], env);
    assert.equal(await usage.exited, 2);
  });
});
