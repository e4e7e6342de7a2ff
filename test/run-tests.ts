/**
 * `npm test`: runs every compiled test file with node's test runner against a real PostgreSQL.
 * DATABASE_URL when set; otherwise a throwaway embedded PostgreSQL (fsync off: it is deleted
 * afterwards) so a machine without PostgreSQL still runs the whole suite.
 */
import { spawn } from 'node:child_process';
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
  const child = spawn(process.execPath, ['--test', '--test-concurrency=2', ...files], {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: databaseUrl },
  });
  const code = await new Promise<number>((resolve) =>
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))),
  );
  await stop();
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
