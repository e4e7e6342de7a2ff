/**
 * The failover half of the postgres.js patch (patches/postgres+3.4.9.patch), against real
 * servers. Unpatched, postgres.js 3.4.9:
 * - connects `target_session_attrs=read-write` to a hot standby of PostgreSQL 14+ (it looks at
 *   default_transaction_read_only alone, which a standby reports as off);
 * - with no usable host, retries at once and for good: a query waits until some host will do
 *   (with several hosts every connect error is swallowed; a proxy that accepts and closes never
 *   lets connect_timeout fire, as each attempt restarts it);
 * - makes each query that queued behind the pool's connections wait for a connect of its own;
 * - keeps a connection whose session turned read-only, failing every write on it with 25006.
 * Each test below fails (or waits past its bound) without its part of the patch.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import {
  chooseToolsets,
  clusterRoot,
  findToolsets,
  type PgNode,
  type PgToolset,
  startPrimary,
  startStandby,
} from '../faults/pg-pair.js';
import { freeFixedPort } from '../faults/ports.js';
import { startProxy } from '../faults/tcp-proxy.js';
import { createTestDatabase } from '../helpers.js';

const { toolsets, skip } = chooseToolsets(await findToolsets());

type Outcome = { result: string; ms: number };

/** How a query ended, and when: "answered", "failed CODE", or "still waiting" after `ms`. */
async function outcome(query: Promise<unknown>, ms = 10000): Promise<Outcome> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<string>((r) => {
    timer = setTimeout(() => r('still waiting'), ms);
  });
  const ended = query.then(
    () => 'answered',
    (error: { code?: string }) => `failed ${error.code}`,
  );
  try {
    return { result: await Promise.race([ended, waited]), ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** The error a query failed with within 10 s, or undefined (answered, or still waiting). */
async function failureOf(query: Promise<unknown>): Promise<Error | undefined> {
  let error: Error | undefined;
  await outcome(
    query.catch((e: Error) => {
      error = e;
    }),
  );
  return error;
}

/** A port nothing listens on (connections refused). */
async function refusedPort(): Promise<number> {
  return freeFixedPort();
}

/** A server that accepts connections and never answers (a frozen server, a lost machine's NAT). */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const pool = (url: string, options: postgres.Options<Record<string, never>> = {}) =>
  postgres(url, { max: 2, connect_timeout: 1.5, onnotice: () => {}, ...options });

describe('postgres.js patch: target_session_attrs like libpq', { skip }, () => {
  for (const tools of toolsets) {
    describe(tools.source, () => {
      let root: string;
      let primary: PgNode;
      let standby: PgNode;
      before(async () => {
        root = await clusterRoot('hookpost-tsa-');
        primary = await startPrimary(tools, 'primary', `${root}/primary`, await freeFixedPort());
        standby = await startStandby(primary, 'standby', `${root}/standby`, await freeFixedPort());
      });
      after(async () => {
        await standby?.stop();
        await primary?.stop();
        await rm(root, { recursive: true, force: true });
      });

      const both = () => `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres`;
      /** Which server a pool with these attrs connects to ("still waiting" unpatched, for some). */
      const serverOf = async (attrs: string) => {
        const sql = pool(`${both()}?target_session_attrs=${attrs}`, { max: 1 });
        try {
          let port = 0;
          const { result } = await outcome(
            sql<{ port: number }[]>`SELECT inet_server_port() AS port`.then(([row]) => {
              port = row!.port;
            }),
          );
          if (result !== 'answered') return result;
          return port === primary.port ? 'primary' : 'standby';
        } finally {
          await sql.end({ timeout: 0 });
        }
      };

      it('read-write and primary skip the hot standby listed first', async () => {
        assert.equal(await serverOf('read-write'), 'primary');
        assert.equal(await serverOf('primary'), 'primary');
      });

      it('read-only, standby, prefer-standby and any take the standby', async () => {
        assert.equal(await serverOf('read-only'), 'standby');
        assert.equal(await serverOf('standby'), 'standby');
        assert.equal(await serverOf('prefer-standby'), 'standby');
        assert.equal(await serverOf('any'), 'standby');
      });

      it('prefer-standby takes the primary when no standby is listed', async () => {
        const sql = pool(`${primary.url()}?target_session_attrs=prefer-standby`, { max: 1 });
        try {
          assert.equal((await outcome(sql`SELECT 1`)).result, 'answered');
        } finally {
          await sql.end({ timeout: 1 });
        }
      });

      it('read-write with only a standby up fails at once, naming each host', async () => {
        const dead = await refusedPort();
        const sql = pool(
          `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${dead}/postgres?target_session_attrs=read-write`,
        );
        try {
          const failure = await failureOf(sql`SELECT 1`);
          assert.ok(failure, 'the query fails');
          assert.match(failure.message, /session is read-only/);
          assert.match(failure.message, new RegExp(`127\\.0\\.0\\.1:${dead}`));
          const { result, ms } = await outcome(sql`SELECT 1`);
          assert.match(result, /^failed /);
          assert.ok(ms < 1000, `failed after ${ms} ms`);
        } finally {
          await sql.end({ timeout: 1 });
        }
      });
    });
  }
});

describe('postgres.js patch: a read-only session is dropped', { skip }, () => {
  let tools: PgToolset;
  let root: string;
  let node: PgNode;
  before(async () => {
    tools = toolsets[0]!;
    root = await clusterRoot('hookpost-ro-');
    node = await startPrimary(tools, 'primary', `${root}/primary`, await freeFixedPort());
  });
  after(async () => {
    await node?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('after a 25006 the pool reconnects and checks the session again', async () => {
    const admin = pool(node.url(), { max: 1 });
    const sql = pool(`${node.url()}?target_session_attrs=read-write`, { max: 1 });
    try {
      await sql`CREATE TABLE t (x int)`;
      // Existing sessions turn read-only at their next transaction, as on a server made read-only.
      await admin`ALTER SYSTEM SET default_transaction_read_only = on`;
      await admin`SELECT pg_reload_conf()`;
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await outcome(sql`INSERT INTO t VALUES (1)`)).result, 'failed 25006');
      // Kept, the connection would refuse the next write the same way; dropped, its successor is
      // checked at connect and refused as read-only.
      assert.equal((await outcome(sql`INSERT INTO t VALUES (2)`)).result, 'failed TARGET_SESSION_ATTRS');
      await admin`ALTER SYSTEM RESET default_transaction_read_only`;
      await admin`SELECT pg_reload_conf()`;
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await outcome(sql`INSERT INTO t VALUES (3)`)).result, 'answered');
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), admin.end({ timeout: 1 })]);
    }
  });

  it('without target_session_attrs too (one host behind a proxy or a DNS name); not under read-only', async () => {
    const admin = pool(node.url(), { max: 1 });
    const plain = pool(node.url(), { max: 1 });
    const readOnly = pool(`${node.url()}?target_session_attrs=read-only`, { max: 1 });
    const pid = async (sql: postgres.Sql) =>
      (await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid;
    try {
      await admin`CREATE TABLE IF NOT EXISTS u (x int)`;
      await admin`ALTER SYSTEM SET default_transaction_read_only = on`;
      await admin`SELECT pg_reload_conf()`;
      await new Promise((r) => setTimeout(r, 300));
      const [plainBefore, readOnlyBefore] = [await pid(plain), await pid(readOnly)];
      assert.equal((await outcome(plain`INSERT INTO u VALUES (1)`)).result, 'failed 25006');
      assert.equal((await outcome(readOnly`INSERT INTO u VALUES (1)`)).result, 'failed 25006');
      // The plain pool's next query runs on a new connection (a new server process); the
      // read-only pool asked for a session that may be read-only and keeps its own.
      assert.notEqual(await pid(plain), plainBefore);
      assert.equal(await pid(readOnly), readOnlyBefore);
    } finally {
      await admin`ALTER SYSTEM RESET default_transaction_read_only`;
      await admin`SELECT pg_reload_conf()`;
      await Promise.all([plain.end({ timeout: 1 }), readOnly.end({ timeout: 1 }), admin.end({ timeout: 1 })]);
    }
  });
});

describe('postgres.js patch: one connect deadline, one round of hosts', () => {
  it('several hosts that all refuse: the query fails at once with each reason', async () => {
    const [a, b] = [await refusedPort(), await refusedPort()];
    const sql = pool(`postgres://postgres@127.0.0.1:${a},127.0.0.1:${b}/postgres`);
    try {
      const error = await failureOf(sql`SELECT 1`);
      assert.ok(error);
      assert.match(error.message, new RegExp(`${a}.*ECONNREFUSED.*${b}.*ECONNREFUSED`));
      const { result, ms } = await outcome(sql`SELECT 1`);
      assert.equal(result, 'failed ECONNREFUSED');
      assert.ok(ms < 1000, `failed after ${ms} ms`);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a proxy that accepts and closes: queries fail within the deadline, attempts are paced', async () => {
    const proxy = await startProxy(await refusedPort());
    proxy.closeOnAccept();
    const sql = pool(`postgres://postgres@127.0.0.1:${proxy.port}/postgres`, {
      max: 4,
      backoff: () => 0.25,
    });
    try {
      const started = Date.now();
      const results: Outcome[] = [];
      // Eight callers, each sending again after each failure, for two seconds.
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (Date.now() - started < 2000) results.push(await outcome(sql`SELECT 1`, 5000));
        }),
      );
      assert.ok(
        results.every((r) => /^failed /.test(r.result) && r.ms < 1600),
        `every query failed within the deadline: ${JSON.stringify(results.filter((r) => r.ms >= 1600))}`,
      );
      // Four connections, one round each per backoff (0.25 s): about 32 in 2 s, not thousands.
      assert.ok(proxy.accepted() <= 60, `${proxy.accepted()} connection attempts in 2 s`);
    } finally {
      await sql.end({ timeout: 1 });
      await proxy.close();
    }
  });

  it('a host that never answers first: the next host gets its share of the deadline', async () => {
    const silent = await silentServer();
    const db = await createTestDatabase(false);
    // WHATWG URLs take one host: the list goes in by hand.
    const { host } = new URL(db.url);
    const sql = pool(db.url.replace(`@${host}`, `@127.0.0.1:${silent.port},${host}`), { max: 1 });
    try {
      const { result, ms } = await outcome(sql`SELECT 1`);
      assert.equal(result, 'answered');
      // The silent host gets half of the 1.5 s; unpatched it got all of it and the query failed.
      assert.ok(ms < 1500, `answered after ${ms} ms`);
    } finally {
      await sql.end({ timeout: 1 });
      await silent.close();
      await db.drop();
    }
  });

  it('queries queued behind the connections fail together at the deadline, not one connect each', async () => {
    const silent = await silentServer();
    const sql = pool(`postgres://postgres@127.0.0.1:${silent.port}/postgres`, { max: 2 });
    try {
      // Twenty queries, two connections: unpatched, the last waited ten connect timeouts.
      const results = await Promise.all(Array.from({ length: 20 }, () => outcome(sql`SELECT 1`, 10000)));
      assert.ok(
        results.every((r) => r.result === 'failed CONNECT_TIMEOUT'),
        JSON.stringify(results),
      );
      const slowest = Math.max(...results.map((r) => r.ms));
      assert.ok(slowest < 2000, `the last failed after ${slowest} ms`);
    } finally {
      await sql.end({ timeout: 0 });
      await silent.close();
    }
  });
});
