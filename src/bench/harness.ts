/**
 * The bench's system under test, in the production topology: a fresh database, a real
 * `hookpost api` process and real `hookpost dispatcher` processes, each a child of the bench so
 * that its CPU time can be read from /proc apart from the load it serves.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { Pool } from 'undici';
import type { Config } from '../config.js';
import { connect, type Sql } from '../db/connect.js';
import { openDatabase } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { withDatabase } from '../db/url.js';
import type { Logger } from '../log.js';
import { NODE_FLAGS } from '../node-flags.js';
import { ChildLogs } from './child-logs.js';
import { findPostmaster, processCpuSeconds, serverCpuSeconds } from './proc-stat.js';

export interface Harness {
  sql: Sql;
  /** Starts a `hookpost dispatcher` process; resolves once it is listening for work. */
  /** Starts a `hookpost dispatcher` process (with `env` added); resolves once it listens for work. */
  startDispatcher(env?: Record<string, string>): Promise<ChildProcess>;
  /** Stops the dispatcher processes (SIGTERM, graceful). */
  stopDispatcher(): Promise<void>;
  api: Pool;
  token: string;
  /** CPU seconds of the `hookpost api` process so far. */
  apiCpuSeconds(): number;
  /** CPU seconds of the running dispatcher processes so far (0 before one starts). */
  dispatcherCpuSeconds(): number;
  /** CPU seconds of the whole PostgreSQL server so far; undefined when it is not on this machine. */
  postgresCpuSeconds: (() => number) | undefined;
  /** What the API and dispatcher processes logged, kept for after the report (child-logs.ts). */
  childLogs: ChildLogs;
  close(): Promise<void>;
}

const BIN = new URL('../../../bin/hookpost.js', import.meta.url).pathname;

/**
 * The API's and dispatchers' node flags: the ones `npm start` runs with (node-flags.ts), then
 * HOOKPOST_BENCH_NODE_ARGS (e.g. "--cpu-prof") for profiling.
 */
export function benchNodeArgs(): string[] {
  return [...NODE_FLAGS, ...(process.env.HOOKPOST_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
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

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

export async function startHarness(config: Config, log: Logger): Promise<Harness> {
  const database = await openDatabase(config, log);
  const admin = connect(database.url, { max: 1 });
  const name = `hookpost_bench_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = withDatabase(database.url, name);
  const sql = connect(url, { max: 4 });
  await migrate(sql);
  const [backend] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  const postmaster = findPostmaster(backend!.pid);
  const token = randomBytes(24).toString('hex');
  const childLogs = new ChildLogs();
  const apiProcess = await startApiProcess(url, token, childLogs);
  const dispatchers: ChildProcess[] = [];
  // A bench that dies half-way (an uncaught error) must not leave its children serving.
  const killAll = () => {
    for (const child of [apiProcess.child, ...dispatchers])
      if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', killAll);
  const api = new Pool(`http://127.0.0.1:${apiProcess.port}`, { connections: 8 });
  return {
    sql,
    async startDispatcher(env: Record<string, string> = {}) {
      const child = await startDispatcherProcess(url, sql, childLogs, env);
      dispatchers.push(child);
      return child;
    },
    async stopDispatcher() {
      await Promise.all(dispatchers.map(stopChild));
    },
    api,
    token,
    apiCpuSeconds: () => processCpuSeconds(apiProcess.child.pid!),
    dispatcherCpuSeconds: () => dispatchers.reduce((sum, d) => sum + processCpuSeconds(d.pid!), 0),
    postgresCpuSeconds: postmaster === undefined ? undefined : () => serverCpuSeconds(postmaster),
    childLogs,
    async close() {
      process.removeListener('exit', killAll);
      await Promise.all(dispatchers.map(stopChild));
      await api.close();
      await stopChild(apiProcess.child);
      await sql.end();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
      await database.stop();
    },
  };
}

/**
 * `hookpost api` as a child process on a free loopback port, with the bench's admin token;
 * resolves once it prints its banner (it is listening then). Its logs go to `logs`.
 */
async function startApiProcess(
  databaseUrl: string,
  token: string,
  logs: ChildLogs,
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    HOOKPOST_ADMIN_TOKEN: token,
    HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true', // the receiver is on loopback
    LOG_LEVEL: 'warn',
  };
  delete env.HOOKPOST_METRICS_PORT; // the dispatcher may take it; two listeners cannot share it
  const child = spawn(process.execPath, [...benchNodeArgs(), BIN, 'api'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  logs.collect('api', child.stderr!);
  let banner = '';
  let ready = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the API process did not start within 15 s')), 15_000);
    const onBanner = (chunk: Buffer) => {
      banner += chunk.toString();
      if (banner.includes('hookpost is listening on')) {
        ready = true;
        clearTimeout(timer);
        child.stdout!.off('data', onBanner);
        logs.collect('api', child.stdout!);
        resolve();
      }
    };
    child.stdout!.on('data', onBanner);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`the API process exited at start (${code}):\n${banner.slice(-2000)}`));
    });
  });
  return { child, port };
}

/** `hookpost dispatcher` as a child process, configured by this process's environment. */
async function startDispatcherProcess(
  databaseUrl: string,
  sql: Sql,
  logs: ChildLogs,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...benchNodeArgs(), BIN, 'dispatcher'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  logs.collect('dispatcher', child.stdout!);
  logs.collect('dispatcher', child.stderr!);
  // Ready once its LISTEN connection shows up: the first enqueue's wake-up must not be missed,
  // and start-up time must not be counted as delivery lag.
  // 60 s: on a shared machine at a load of 20 a dispatcher can take over 15 s to start.
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error('the dispatcher process exited at start');
    const [row] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'hookpost-dispatcher' AND query ILIKE 'listen %'`;
    if (row!.n > 0) return child;
    if (Date.now() > deadline) {
      // Not yet among the harness's dispatchers: stop it here, or it keeps the bench alive.
      child.kill('SIGTERM');
      throw new Error('the dispatcher process did not start listening within 60 s');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
