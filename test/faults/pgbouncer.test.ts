/**
 * hookpost behind a real PgBouncer configured as docs/high-availability.md says: every start-up
 * parameter hookpost sends ignored (with only jit and synchronous_commit, the dispatcher's pools
 * are refused, "unsupported startup parameter: plan_cache_mode", and nothing is delivered while
 * /readyz says ready), server_login_retry and query_wait_timeout short. With the server down,
 * requests are answered 503 + Retry-After within 2 s (PgBouncer answers "server login has been
 * failing", or query_wait_timeout ends a query it queued); once it is back, 202 again.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chown, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runAsIds } from '../../src/db/embedded.js';
import type { HookpostProcess } from '../cli/process.js';
import { type Receiver, startReceiver, waitFor } from '../helpers.js';
import { skipUnlessInstalled } from '../system-binary.js';
import { startHookpostOn } from './hookpost-on.js';
import { runThroughOutage } from './outage-scenario.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary } from './pg-pair.js';
import { freeFixedPort } from './ports.js';
import { byStatus } from './steady-load.js';

const { tools, skip: noServer } = await preferredToolset();
const skip = skipUnlessInstalled(['pgbouncer'], 'apt-get install pgbouncer') || noServer;

/** The guide's settings (docs/high-availability.md, "PgBouncer"). */
const pgbouncerIni = (root: string, serverPort: number, port: number) => `[databases]
postgres = host=127.0.0.1 port=${serverPort} dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${root}/userlist.txt
pool_mode = session
default_pool_size = 60
ignore_startup_parameters = jit,statement_timeout,synchronous_commit,plan_cache_mode,enable_seqscan,enable_hashjoin,enable_mergejoin
server_login_retry = 1
query_wait_timeout = 1
`;

describe('behind PgBouncer', { skip }, () => {
  let root: string;
  let server: PgNode;
  let pgbouncer: ChildProcess;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiUrl: string;

  before(async () => {
    root = await clusterRoot('hookpost-pgbouncer-');
    server = await startPrimary(tools!, 'server', path.join(root, 'server'), await freeFixedPort());
    const port = await freeFixedPort();
    const ids = runAsIds();
    for (const [file, text] of [
      ['pgbouncer.ini', pgbouncerIni(root, server.port, port)],
      ['userlist.txt', '"postgres" ""\n'],
    ] as const) {
      await writeFile(path.join(root, file), text);
      if (ids) await chown(path.join(root, file), ids.uid, ids.gid);
    }
    // PgBouncer refuses to run as root, like PostgreSQL.
    pgbouncer = spawn('pgbouncer', [path.join(root, 'pgbouncer.ini')], { ...ids, stdio: 'ignore' });
    await waitFor(
      'PgBouncer listening',
      () =>
        new Promise<boolean>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.destroy();
            resolve(true);
          });
          s.on('error', () => resolve(false));
        }),
    );
    receiver = await startReceiver();
    ({ hookpost, apiUrl } = await startHookpostOn(`postgres://postgres@127.0.0.1:${port}/postgres`, root));
  });
  after(async () => {
    if (hookpost && hookpost.child.exitCode === null) await hookpost.stop('SIGTERM');
    pgbouncer?.kill();
    await receiver?.close();
    await server?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('delivers through it, answers 503 within 2 s while the server is down, and recovers', async () => {
    try {
      // Claims work through PgBouncer: every start-up parameter of the dispatcher's pools is ignored.
      await runThroughOutage(
        {
          apiUrl,
          receiver,
          prefix: 'pgb',
          outageMs: 2000,
          breakIt: () => server.stop(),
          mendIt: () => server.start(),
        },
        ({ load, mendedAt, during: down, slowest, back }) => {
          console.log(
            `# PgBouncer: ${down.length} requests while down ${JSON.stringify(byStatus(down))}, slowest ${slowest} ms; ` +
              `202 again ${back - mendedAt} ms after the server was up`,
          );
          assert.ok(down.length > 0);
          assert.deepEqual(Object.keys(byStatus(down)), ['503'], JSON.stringify(byStatus(down)));
          assert.ok(slowest < 2000, `slowest 503 ${slowest} ms`);
          assert.ok(
            load.answers.every((a) => [200, 202, 503].includes(a.status)),
            JSON.stringify(byStatus(load.answers)),
          );
        },
      );
      assert.equal(hookpost.child.exitCode, null);
    } catch (error) {
      (error as Error).message += `\n--- hookpost:\n${hookpost.output().slice(-4000)}`;
      throw error;
    }
  });
});
