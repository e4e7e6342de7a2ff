/**
 * hookpost behind a real HAProxy configured as docs/high-availability.md tells operators: one
 * server per node, health-checked on the HTTP endpoint that says whether the node is the primary
 * (Patroni's REST API `GET /primary`; here a small stand-in that asks the node), and a `backup`
 * server where nothing listens, so that with no primary a client is turned away at once instead
 * of waiting in HAProxy's queue. A primary and a synchronous standby; `kill -9` of the primary, a
 * few seconds without one, `pg_ctl promote` of the standby: meanwhile every request is answered
 * 503 database_unavailable + Retry-After within 2 s, never a 500; once HAProxy sees the new
 * primary, requests are accepted again without restarting hookpost.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import type { HookpostProcess } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { startHookpostOn } from './hookpost-on.js';
import { runThroughOutage } from './outage-scenario.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary, startStandby } from './pg-pair.js';
import { freeFixedPort } from './ports.js';
import { byStatus } from './steady-load.js';

const { tools, skip: noServer } = await preferredToolset();
const skip = skipUnlessInstalled(['haproxy'], 'apt-get install haproxy') || noServer;

/** The guide's haproxy.cfg ("Patroni + etcd + HAProxy"), with this test's ports. */
const haproxyCfg = (port: number, nodes: { port: number; checkPort: number }[], refusePort: number) => `
defaults
    mode tcp
    timeout connect 1s
    timeout client 30m
    timeout server 30m

listen postgres
    bind 127.0.0.1:${port}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((n, i) => `    server pg${i + 1} 127.0.0.1:${n.port} check port ${n.checkPort}`).join('\n')}
    server refuse 127.0.0.1:${refusePort} backup
`;

/** What Patroni's `GET /primary` answers: 200 on the primary, 503 on a standby or a node that is down. */
async function startPrimaryCheck(node: PgNode): Promise<{ port: number; close(): Promise<void> }> {
  const sql = postgres(node.url(), { max: 1, connect_timeout: 1, idle_timeout: 5, onnotice: () => {} });
  const server = http.createServer((_req, res) => {
    sql<{ primary: boolean }[]>`SELECT NOT pg_is_in_recovery() AS primary`.then(
      ([row]) => res.writeHead(row?.primary ? 200 : 503).end(),
      () => res.writeHead(503).end(),
    );
  });
  const port = await freeFixedPort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await sql.end({ timeout: 1 });
    },
  };
}

describe('behind HAProxy', { skip }, () => {
  let root: string;
  let primary: PgNode;
  let standby: PgNode;
  const checks: { port: number; close(): Promise<void> }[] = [];
  let haproxy: ChildProcess;
  let haproxyLog = '';
  let haproxyPort: number;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiUrl: string;

  /** Whether a session through HAProxy lands on a writable server. */
  const writableThroughHaproxy = async () => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${haproxyPort}/postgres`, {
      max: 1,
      connect_timeout: 1,
      onnotice: () => {},
    });
    try {
      const [row] = await sql<{ primary: boolean }[]>`SELECT NOT pg_is_in_recovery() AS primary`;
      return row?.primary === true;
    } catch {
      return false;
    } finally {
      await sql.end({ timeout: 1 });
    }
  };

  before(async () => {
    root = await clusterRoot('hookpost-haproxy-');
    primary = await startPrimary(tools!, 'a', path.join(root, 'a'), await freeFixedPort());
    standby = await startStandby(primary, 'b', path.join(root, 'b'), await freeFixedPort(), {
      synchronous: true,
    });
    for (const node of [primary, standby]) checks.push(await startPrimaryCheck(node));
    haproxyPort = await freeFixedPort();
    const cfg = path.join(root, 'haproxy.cfg');
    await writeFile(
      cfg,
      haproxyCfg(
        haproxyPort,
        [primary, standby].map((n, i) => ({ port: n.port, checkPort: checks[i]!.port })),
        await freeFixedPort(), // nothing listens there
      ),
    );
    haproxy = spawn('haproxy', ['-f', cfg, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout!.on('data', (d: Buffer) => (haproxyLog += d));
    haproxy.stderr!.on('data', (d: Buffer) => (haproxyLog += d));
    await waitFor('HAProxy sending sessions to the primary', writableThroughHaproxy, 15000).catch((error) => {
      (error as Error).message += `\n--- haproxy:\n${haproxyLog}`;
      throw error;
    });
    receiver = await startReceiver();
    ({ hookpost, apiUrl } = await startHookpostOn(
      `postgres://postgres@127.0.0.1:${haproxyPort}/postgres`,
      root,
    ));
  });
  after(async () => {
    if (hookpost && hookpost.child.exitCode === null) await hookpost.stop('SIGTERM');
    if (haproxy && haproxy.exitCode === null) {
      const exited = new Promise((resolve) => haproxy.once('exit', resolve));
      haproxy.kill();
      await exited;
    }
    for (const check of checks) await check.close();
    await receiver?.close();
    for (const node of [primary, standby]) await node?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('answers 503 within 2 s while there is no primary, and 2xx once HAProxy has the new one', async () => {
    try {
      await runThroughOutage(
        {
          apiUrl,
          receiver,
          prefix: 'hap',
          outageMs: 3000,
          breakIt: () => primary.kill(),
          mendIt: () => standby.promote(),
        },
        async ({ load, brokenAt, mendedAt, during: gap, slowest, back }) => {
          const first503 = Math.min(...gap.filter((a) => a.status === 503).map((a) => a.answeredAt));
          console.log(
            `# HAProxy: ${gap.length} requests without a primary ${JSON.stringify(byStatus(gap))}, slowest ${slowest} ms, ` +
              `first 503 ${first503 - brokenAt} ms after the kill; 202 again ${back - mendedAt} ms after the promotion`,
          );
          assert.ok(gap.length > 0, 'callers sent requests while there was no primary');
          assert.deepEqual(Object.keys(byStatus(gap)), ['503'], JSON.stringify(byStatus(gap)));
          assert.ok(slowest < 2000, `slowest 503 ${slowest} ms`);
          assert.ok(gap.every((a) => Number(a.retryAfter) > 0 && a.code === 'database_unavailable'));
          assert.ok(
            load.answers.every((a) => [200, 202, 503].includes(a.status)),
            JSON.stringify(byStatus(load.answers)),
          );
          assert.ok(back - mendedAt < 5000, `202 again ${back - mendedAt} ms after the promotion`);
          // A read needs the database too, and is answered from the new primary.
          const list = await fetch(`${apiUrl}/v1/endpoints`, {
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          assert.equal(list.status, 200);
        },
      );
      assert.equal(hookpost.child.exitCode, null, 'hookpost is still running');
    } catch (error) {
      (error as Error).message +=
        `\n--- hookpost:\n${hookpost.output().slice(-4000)}\n--- haproxy:\n${haproxyLog.slice(-3000)}`;
      throw error;
    }
  });
});
