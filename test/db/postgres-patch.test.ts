/**
 * postgres.js 3.4.9 writes to a connection's socket from setImmediate without checking that the
 * socket still exists (porsager/postgres#1154, #1208). When the server ends a connection that a
 * query is about to use, that throws from the timer and kills the process. patches/ guards it;
 * this reproduces the crash deterministically in a child process: without the patch it exits 1
 * with "Cannot read properties of null (reading 'write')", with it the query fails cleanly.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabase } from '../helpers.js';

const exec = promisify(execFile);
const POSTGRES_JS = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../node_modules/postgres/src/index.js',
);

const SCRIPT = `
import postgres from ${JSON.stringify(POSTGRES_JS)};
const url = process.argv[2];
const sql = postgres(url, { max: 2, onnotice: () => {} });
const admin = postgres(url, { max: 1 });
// A reserved connection is pinned: the pool cannot swap it for a fresh one after its backend dies.
const reserved = await sql.reserve();
const [{ pid }] = await reserved\`SELECT pg_backend_pid() AS pid\`;
await admin\`SELECT pg_terminate_backend(\${pid})\`;
await new Promise((r) => setTimeout(r, 200));
try {
  await reserved\`SELECT 1\`;
  console.log('query answered');
} catch (error) {
  console.log('query failed:', error.code);
}
await new Promise((r) => setTimeout(r, 200));
console.log('process alive');
process.exit(0);
`;

describe('postgres.js patch (patches/postgres+3.4.9.patch)', () => {
  it('a query on a connection whose server process died fails with CONNECTION_CLOSED; the process lives', async () => {
    const db = await createTestDatabase(false);
    const file = path.join(os.tmpdir(), `hookpost-pgjs-${process.pid}.mjs`);
    await writeFile(file, SCRIPT);
    try {
      const { stdout } = await exec(process.execPath, [file, db.url], { timeout: 20000 });
      assert.match(stdout, /query failed: CONNECTION_CLOSED/);
      assert.match(stdout, /process alive/);
    } finally {
      await db.drop();
    }
  });
});
