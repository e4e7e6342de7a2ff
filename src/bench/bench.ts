/**
 * `hookpost bench`: the built-in load test. Runs the real API in this process and a real
 * `hookpost dispatcher` process (the production topology) against a fresh database, a
 * signature-checking receiver in a worker thread, enqueues through the public batch API, and
 * compares with the same signed POSTs sent straight from memory.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Pool } from 'undici';
import { createApp } from '../api/app.js';
import { serveApp } from '../api/serve.js';
import type { Config } from '../config.js';
import { connect, type Sql } from '../db/connect.js';
import { openDatabase } from '../db/database.js';
import { migrate, readMigrations } from '../db/migrate.js';
import { createWaker } from '../deliveries/wakeup.js';
import { Sender } from '../dispatch/sender.js';
import { signatureHeader } from '../dispatch/signing.js';
import { createSecretBox, secretKeyBytes } from '../endpoints/secrets.js';
import { EndpointStore } from '../endpoints/store.js';
import type { Logger } from '../log.js';
import { call, enqueueAll, now, payloadOf } from './load.js';
import { BenchReceiver, quantile, type ReceiverStats } from './receiver.js';
import { type RssSampler, sampleRss } from './rss.js';

/** Seconds at the start of a `--rate` run left out of the steady-state lag figure. */
const WARMUP_SECONDS = 2;

export interface BenchOptions {
  n: number;
  endpoints: number;
  payloadBytes: number;
  /** Offered load in deliveries/s; undefined = as fast as possible. */
  rate: number | undefined;
  durationSeconds: number;
  /** Enqueue everything first, then start the dispatcher on the full backlog and watch its memory. */
  drain: boolean;
}

const fmt = (x: number, digits = 0) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export interface Harness {
  sql: Sql;
  /** Starts the `hookpost dispatcher` process (with `env` added); resolves once it is listening for work. */
  startDispatcher(env?: Record<string, string>): Promise<ChildProcess>;
  /** Stops the dispatcher process (SIGTERM, graceful). */
  stopDispatcher(): Promise<void>;
  api: Pool;
  token: string;
  close(): Promise<void>;
}

export async function startHarness(config: Config, log: Logger): Promise<Harness> {
  const database = await openDatabase(config, log);
  const admin = connect(database.url, { max: 1 });
  const name = `hookpost_bench_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(database.url);
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 20 });
  await migrate(sql);
  const token = randomBytes(24).toString('hex');
  const secrets = createSecretBox(config.secretKey);
  const waker = createWaker(sql);
  const app = createApp({
    sql,
    config,
    log,
    adminToken: token,
    endpoints: new EndpointStore(sql, secrets),
    migrationCount: (await readMigrations()).length,
    onEnqueued: () => waker.poke(),
  });
  const server = await serveApp(app, 0, '127.0.0.1');
  let dispatcher: ChildProcess | undefined;
  const startDispatcher = async (env: Record<string, string> = {}) => {
    dispatcher = await startDispatcherProcess(url.toString(), sql, env);
    return dispatcher;
  };
  const stopDispatcher = async () => {
    if (!dispatcher || dispatcher.exitCode !== null) return;
    dispatcher.kill('SIGTERM');
    await once(dispatcher, 'exit');
  };
  const api = new Pool(`http://127.0.0.1:${server.port}`, { connections: 8 });
  return {
    sql,
    startDispatcher,
    stopDispatcher,
    api,
    token,
    async close() {
      await stopDispatcher();
      await api.close();
      waker.close();
      await server.close();
      await sql.end();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
      await database.stop();
    },
  };
}

/** `hookpost dispatcher` as a child process, configured by this process's environment. */
async function startDispatcherProcess(
  databaseUrl: string,
  sql: Sql,
  env: Record<string, string>,
): Promise<ChildProcess> {
  const bin = new URL('../../../bin/hookpost.js', import.meta.url).pathname;
  // HOOKPOST_BENCH_NODE_ARGS (e.g. "--cpu-prof") is passed to the dispatcher's node, for profiling.
  const nodeArgs = (process.env.HOOKPOST_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, bin, 'dispatcher'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  // Ready once its LISTEN connection shows up: the first enqueue's wake-up must not be missed,
  // and start-up time must not be counted as delivery lag.
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error('the dispatcher process exited at start');
    const [row] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'hookpost-dispatcher' AND query ILIKE 'listen %'`;
    if (row!.n > 0) return child;
    if (Date.now() > deadline) throw new Error('the dispatcher process did not start listening within 15 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The machine's ceiling: the same signed POSTs from memory, same concurrency, no queue. */
async function measureCeiling(config: Config, receiver: BenchReceiver, keys: Buffer[], opts: BenchOptions) {
  const sender = new Sender({
    timeoutMs: config.requestTimeoutMs,
    snippetBytes: config.responseSnippetBytes,
    allowPrivateTargets: true,
    connectionsPerOrigin: config.dispatchConcurrency,
    userAgent: 'hookpost/bench',
  });
  const started = now();
  let next = 0;
  const worker = async () => {
    while (next < opts.n) {
      const i = next++;
      const id = `msg_ceiling_${i}`;
      const body = Buffer.from(payloadOf(i, opts.payloadBytes));
      const ts = Math.floor(Date.now() / 1000);
      const ep = i % keys.length;
      await sender.send({
        url: receiver.url(ep),
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signatureHeader([keys[ep]!], id, ts, body),
        },
        body,
      });
    }
  };
  await Promise.all(Array.from({ length: config.dispatchConcurrency }, worker));
  const stats = await receiver.waitForCount(opts.n, 30_000);
  await sender.close();
  const last = latest(stats.arrivals.values());
  return { perSecond: opts.n / ((last - started) / 1000), seconds: (last - started) / 1000 };
}

/** The largest value; a loop, since spreading 200,000 arguments overflows the call stack. */
function latest(values: Iterable<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  return max;
}

function check(stats: ReceiverStats, expected: Map<string, number>) {
  let missing = 0;
  for (const id of expected.keys()) if (!stats.arrivals.has(id)) missing++;
  return { missing, duplicates: stats.duplicates, badSignatures: stats.badSignatures };
}

/** Runs the benchmark and prints its figures; returns the exit code (1 if anything was lost or wrong). */
export async function runBench(config: Config, log: Logger, opts: BenchOptions): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const receiver = await BenchReceiver.start();
  const h = await startHarness(config, log);
  let code = 0;
  try {
    const endpointIds: string[] = [];
    const keys: Buffer[] = [];
    for (let i = 0; i < opts.endpoints; i++) {
      const ep = (await call(h, 'POST', '/v1/endpoints', { url: receiver.url(i) })) as {
        id: string;
        secret: string;
      };
      endpointIds.push(ep.id);
      keys.push(secretKeyBytes(ep.secret));
    }
    receiver.setKeys(keys);
    const total = opts.rate === undefined ? opts.n : Math.round(opts.rate * opts.durationSeconds);
    out(
      `hookpost bench: ${fmt(total)} deliveries to ${opts.endpoints} endpoints, ${opts.payloadBytes}-byte payloads, ` +
        `concurrency ${config.dispatchConcurrency}${opts.rate ? `, offered ${fmt(opts.rate)}/s for ${opts.durationSeconds} s` : ''}`,
    );
    if (!opts.drain) await h.startDispatcher();
    const enq = await enqueueAll(h, endpointIds, opts, total);
    let drain: { started: number; rss: RssSampler } | undefined;
    if (opts.drain) {
      const started = now();
      drain = { started, rss: sampleRss((await h.startDispatcher()).pid!) };
    }
    const stats = await receiver.waitForCount(total, Math.max(60_000, total * 2));
    const last = latest(stats.arrivals.values());
    const rss = drain?.rss.stop();
    const lagsSince = (from: number) =>
      [...enq.acked].flatMap(([id, ack]) => {
        const at = stats.arrivals.get(id);
        return at === undefined || ack < from ? [] : [at - ack];
      });
    const lags = lagsSince(0);
    // At a steady rate, the first seconds measure start-up (the dispatcher process loading,
    // connections to the receiver opening), not the steady state the figure is about.
    const warmup = opts.rate !== undefined && opts.durationSeconds > 2 * WARMUP_SECONDS;
    const steadyLags = warmup ? lagsSince(enq.started + WARMUP_SECONDS * 1000) : lags;
    const pcts = (values: number[]) =>
      `p50 ${fmt(quantile(values, 0.5), 1)} ms, p95 ${fmt(quantile(values, 0.95), 1)} ms, p99 ${fmt(quantile(values, 0.99), 1)} ms`;
    const enqSeconds = (enq.finished - enq.started) / 1000;
    const delSeconds = (last - enq.started) / 1000;
    out(
      `  enqueue    ${fmt(total)} in ${fmt(enqSeconds, 2)} s = ${fmt(total / enqSeconds)}/s (public batch API)`,
    );
    out(
      `  delivered  ${fmt(stats.arrivals.size)} in ${fmt(delSeconds, 2)} s = ${fmt(stats.arrivals.size / delSeconds)}/s (first enqueue → last receipt)`,
    );
    if (drain && rss) {
      const drained = (last - drain.started) / 1000;
      out(
        `  drain      ${fmt(stats.arrivals.size)} in ${fmt(drained, 2)} s = ${fmt(stats.arrivals.size / drained)}/s (dispatcher started on the full backlog)`,
      );
      const at = (f: number) => fmt(rss[Math.min(rss.length - 1, Math.floor(rss.length * f))] ?? 0);
      out(
        `  memory     dispatcher RSS at 10/50/90/100% of the drain: ${at(0.1)} / ${at(0.5)} / ${at(0.9)} / ${at(1)} MiB, peak ${fmt(Math.max(...rss))} MiB`,
      );
    } else
      out(
        warmup
          ? `  lag        ${pcts(steadyLags)} (enqueue commit → receipt, after ${WARMUP_SECONDS} s of warm-up)\n` +
              `             ${pcts(lags)} (the whole run)`
          : `  lag        ${pcts(lags)} (enqueue commit → receipt)`,
      );
    const verdict = check(stats, enq.acked);
    out(
      `  check      ${fmt(verdict.missing)} missing, ${fmt(verdict.duplicates)} duplicates, ${fmt(verdict.badSignatures)} bad signatures`,
    );
    if (verdict.missing + verdict.duplicates + verdict.badSignatures > 0) code = 1;
    if (opts.rate === undefined) {
      await h.stopDispatcher();
      receiver.reset();
      const ceiling = await measureCeiling(config, receiver, keys, opts);
      const throughput = drain
        ? stats.arrivals.size / ((last - drain.started) / 1000)
        : stats.arrivals.size / delSeconds;
      out(
        `  ceiling    ${fmt(opts.n)} in ${fmt(ceiling.seconds, 2)} s = ${fmt(ceiling.perSecond)}/s (same signed POSTs from memory, no queue)`,
      );
      out(`  ratio      ${fmt(throughput / ceiling.perSecond, 2)} of the ceiling`);
    }
  } finally {
    await h.close();
    await receiver.close();
  }
  return code;
}
