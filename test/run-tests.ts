/**
 * `npm test`: runs every compiled test file with node's test runner against a real PostgreSQL.
 * DATABASE_URL when set; otherwise a throwaway embedded PostgreSQL (fsync off: it is deleted
 * afterwards) so a machine without PostgreSQL still runs the whole suite.
 *
 * The tests (and every process they start: hookpost, PostgreSQL tools, Chromium, Prometheus) get
 * a temp dir of their own as TMPDIR. Whatever is left in it when they finish is a leak: the run
 * fails and names it, so a test that forgets its temp files is caught the first time it runs
 * (and other people's files in the machine's /tmp never make it look like ours).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embedded.js';

const here = path.dirname(fileURLToPath(import.meta.url));

async function findTestFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = await Promise.all(
    entries.map((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return findTestFiles(full);
      return Promise.resolve(e.name.endsWith('.test.js') ? [full] : []);
    }),
  );
  return files.flat().sort();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

async function main(): Promise<number> {
  const filter = process.argv.slice(2);
  let files = await findTestFiles(here);
  if (filter.length > 0) files = files.filter((f) => filter.some((p) => f.includes(p)));
  // Paths to compiled files outside the suite (test/fixtures/) run as given: the runner's own test.
  if (filter.length > 0 && filter.every((f) => f.endsWith('.js') && existsSync(f))) files = filter;
  let databaseUrl = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!databaseUrl) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-test-'));
    // The server runs as the `postgres` user when we are root: it must be able to enter this dir.
    await chmod(dir, 0o755);
    const started = Date.now();
    const db = await startEmbeddedPostgres({
      dataDir: dir,
      port: await freePort(),
      persistent: false,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '400' },
    });
    process.stdout.write(`# embedded PostgreSQL for tests started in ${Date.now() - started} ms\n`);
    databaseUrl = db.url;
    stop = async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'hookpost-test-tmp-'));
  // Embedded PostgreSQL tools run as the `postgres` user when we are root: they write here too.
  await chmod(tmp, 0o1777);
  const child = spawn(process.execPath, ['--test', '--test-concurrency=2', ...files], {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: databaseUrl, TMPDIR: tmp },
  });
  const code = await new Promise<number>((resolve) =>
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))),
  );
  await stop();
  const leftovers = await readdir(tmp);
  await rm(tmp, { recursive: true, force: true });
  if (leftovers.length > 0) {
    process.stdout.write(
      `# FAIL: the tests left ${leftovers.length} file(s) in their temp dir (each test removes its own):\n` +
        leftovers.map((name) => `#   ${name}\n`).join(''),
    );
    return code || 1;
  }
  return code;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
