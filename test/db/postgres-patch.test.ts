/**
 * postgres.js 3.4.9 writes to a connection's socket from setImmediate without checking that the
 * socket still exists (porsager/postgres#1154, #1208). When the server ends a connection that a
 * query is about to use, that throws from the timer and kills the process. patches/ guards it;
 * this reproduces the crash deterministically in a child process: without the patch it exits 1
 * with "Cannot read properties of null (reading 'write')", with it the query fails cleanly.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { connect } from '../../src/db/connect.js';
import { startProxy } from '../faults/tcp-proxy.js';
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

/** How a statement ended within `ms`: "answered", "failed CODE" or "still waiting". */
async function settle(query: Promise<unknown>, ms = 5000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<string>((r) => {
    timer = setTimeout(() => r('still waiting'), ms);
  });
  const ended = query.then(
    () => 'answered',
    (error: { code?: string }) => `failed ${error.code}`,
  );
  try {
    return await Promise.race([ended, waited]);
  } finally {
    clearTimeout(timer);
  }
}

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
      await rm(file, { force: true });
    }
  });

  it('a reserve() queued behind a connection that drops gets the reconnected connection', async () => {
    // porsager/postgres#1195: onclose handed the queued reserve to the reconnect, which dropped
    // it once connected; the reserve never settled and its pool slot was gone. When the enqueue
    // reserved connections, requests hung for good after a database restart (seen in the kill -9
    // test); the advisory-lock tasks (migrations, retention, the message-log index) still reserve.
    // The connection drops without an error message here (a proxy cuts it) and the reconnect
    // succeeds at once.
    const db = await createTestDatabase(false);
    const proxy = await startProxy(Number(new URL(db.url).port));
    const sql = connect(proxy.via(db.url), { max: 1 });
    try {
      await sql`SELECT 1`;
      const sleeping = sql`SELECT pg_sleep(30)`.execute().then(
        () => 'answered',
        () => 'failed',
      );
      await new Promise((r) => setTimeout(r, 100));
      const reserving = sql.reserve(); // waits: the pool's only connection is busy
      await new Promise((r) => setTimeout(r, 100));
      await proxy.cut();
      await proxy.restore();
      assert.equal(await sleeping, 'failed', 'the query on the dropped connection fails');
      const settled = await Promise.race([
        reserving.then(
          (reserved) => {
            reserved.release();
            return 'reserved';
          },
          () => 'failed',
        ),
        new Promise<string>((r) => setTimeout(() => r('still waiting'), 5000)),
      ]);
      assert.notEqual(settled, 'still waiting', 'the reserve settles');
      const again = await sql.reserve();
      const [row] = await again<{ one: number }[]>`SELECT 1 AS one`;
      assert.equal(row!.one, 1, 'a new reserve gets a working connection');
      again.release();
      const [after] = await sql<{ one: number }[]>`SELECT 1 AS one`;
      assert.equal(after!.one, 1, 'the pool works after the release');
    } finally {
      await sql.end({ timeout: 1 });
      await proxy.close();
      await db.drop();
    }
  });

  it('a reserved connection whose server process died: its statements fail, and releasing it leaves the pool working', async () => {
    // porsager/postgres#1199: release() handed the dead connection back to the pool as if it were
    // open, and the pool's later queries went to it and never settled; and a statement written
    // between the socket's error and its close was never failed. The advisory-lock tasks
    // (migrations, the retention pass, the message-log index) reserve a connection, run cleanup
    // statements on it in `finally` and release it, so a database restart during one of them hung
    // the task or broke its pool for good (the retention pass runs on the dispatcher's pool).
    // Without the release patch the pool's statements below fail or wait for good.
    const db = await createTestDatabase(false);
    const sql = connect(db.url, { max: 1 });
    try {
      for (let round = 0; round < 3; round++) {
        const reserved = await sql.reserve();
        const [row] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
        await db.sql`SELECT pg_terminate_backend(${row!.pid})`;
        assert.match(
          await settle(reserved`SELECT 1`),
          /^failed /,
          'a statement on the dead connection fails',
        );
        assert.match(await settle(reserved`SELECT 2`), /^failed /, 'so does a cleanup statement after it');
        reserved.release();
        // Like any pool whose connection was ended by the server, the next statement or two
        // may fail (the server's termination notice); none may wait for good.
        const outcomes: string[] = [];
        for (let i = 0; i < 4; i++) outcomes.push(await settle(sql`SELECT 1`));
        assert.ok(!outcomes.includes('still waiting'), `no statement waits for good: ${outcomes.join(', ')}`);
        assert.equal(outcomes.at(-1), 'answered', `the pool answers again: ${outcomes.join(', ')}`);
      }
    } finally {
      await sql.end({ timeout: 1 });
      await db.drop();
    }
  });

  it('a statement written between a socket error and its close fails instead of waiting for good', async () => {
    // porsager/postgres#1199's other half: upstream fails the waiting statements at close only
    // when the close came without an error, as the error event failed those it knew of. One
    // sent to the connection after the error (it still sat in the pool as open) was never
    // failed. Deterministic here: the statement goes out from inside the socket's error event.
    const db = await createTestDatabase(false);
    const { hostname, port } = new URL(db.url);
    const sockets: net.Socket[] = [];
    // `socket` (a connected socket of the caller's) is in postgres.js's documentation, not its types.
    const options = {
      max: 1,
      onnotice: () => {},
      socket: () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(Number(port), hostname, () => resolve(socket));
          socket.once('error', reject);
          sockets.push(socket);
        }),
    };
    const sql = postgres(db.url, options as postgres.Options<Record<string, never>>);
    try {
      await sql`SELECT 1`;
      const late = new Promise<string>((resolve) => {
        sockets.at(-1)!.once('error', () => resolve(settle(sql`SELECT 2`.execute())));
      });
      sockets.at(-1)!.destroy(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
      assert.match(await late, /^failed /, 'the statement sent after the error fails');
      assert.equal(await settle(sql`SELECT 3`.execute()), 'answered', 'the pool reconnects');
    } finally {
      await sql.end({ timeout: 1 });
      await db.drop();
    }
  });

  it("a cleanup statement on a reservation whose connection closed fails, and the pool's waiting query is not hurt", async () => {
    // Once a reserved connection has closed, onclose hands it to the pool, reconnecting it for a
    // query that waits there. Upstream, a statement still sent through the old reservation (the
    // `finally` of the retention pass, which runs on the dispatcher's pool) went to that
    // connection: in the middle of its startup, or it failed the pool's query. Now it fails alone.
    const db = await createTestDatabase(false);
    const sql = connect(db.url, { max: 1 });
    try {
      const reserved = await sql.reserve();
      const [row] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      const waiting = settle(sql`SELECT 1`.execute(), 10_000); // queued: the only connection is reserved
      await db.sql`SELECT pg_terminate_backend(${row!.pid})`;
      assert.match(await settle(reserved`SELECT pg_sleep(0)`), /^failed /, 'the reserved statement fails');
      await new Promise((r) => setTimeout(r, 200)); // the close has handed the connection on
      assert.equal(
        await settle(reserved`SELECT pg_advisory_unlock_all()`),
        'failed CONNECTION_CLOSED',
        'a cleanup on the old reservation fails at once',
      );
      reserved.release();
      assert.notEqual(await waiting, 'still waiting', "the pool's waiting query settles");
      const outcomes: string[] = [];
      for (let i = 0; i < 4; i++) outcomes.push(await settle(sql`SELECT 1`.execute()));
      assert.equal(outcomes.at(-1), 'answered', `the pool answers: ${outcomes.join(', ')}`);
    } finally {
      await sql.end({ timeout: 1 });
      await db.drop();
    }
  });
  it('a statement of a transaction whose connection closed fails instead of running on the reconnected session', async () => {
    // The transaction's side of #1199: sql.begin kept sending its statements to its connection
    // after that closed and the pool had reconnected it for a waiting query. Written there, a
    // statement ran in the new session outside any transaction (committed alone), or, with
    // several hosts, on whatever host the reconnect reached (a standby, during a failover).
    const db = await createTestDatabase(false);
    const sql = connect(db.url, { max: 1 });
    try {
      await sql`CREATE TABLE stray (x int)`;
      let waiting: Promise<string> | undefined;
      const transaction = sql
        .begin(async (tx) => {
          const [row] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          waiting = settle(sql`SELECT 1`.execute()); // queued: the only connection is the transaction's
          await db.sql`SELECT pg_terminate_backend(${row!.pid})`;
          await new Promise((r) => setTimeout(r, 300)); // closed, and reconnected for the waiting query
          await tx`INSERT INTO stray VALUES (1)`;
        })
        .then(
          () => 'committed',
          () => 'failed',
        );
      assert.equal(await transaction, 'failed');
      assert.notEqual(await waiting, 'still waiting', "the pool's waiting query settles");
      await new Promise((r) => setTimeout(r, 300));
      const [count] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM stray`;
      assert.equal(count!.n, 0, "the transaction's insert did not run on another session");
    } finally {
      await sql.end({ timeout: 1 });
      await db.drop();
    }
  });
});
