// graphile-worker sender vs the same machine: N × 1 KB to 10 endpoints on one receiver, CPU per
// delivery of the worker process and PostgreSQL (from /proc), first enqueue → last receipt.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { makeWorkerUtils } from 'graphile-worker';
import pg from 'pg';

// GW_RATE R (and GW_DURATION seconds, default 20): jobs added every 10 ms at a steady R/s, as
// `hookpost bench --rate R` paces its batch requests; the cost is then taken after a 2 s warm-up.
const RATE = process.env.GW_RATE ? Number(process.env.GW_RATE) : undefined;
const DURATION = Number(process.env.GW_DURATION ?? 20);
const WARMUP_MS = 2000;
const N = RATE ? Math.round(RATE * DURATION) : Number(process.env.GW_N ?? 20000);
const server = process.env.GW_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const dbName = `gw_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: `${server}/postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const url = `${server}/${dbName}`;
const utils = await makeWorkerUtils({ connectionString: url });
await utils.migrate();
const ticks = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
};
const own = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};
const [{ pid: backend }] = (await admin.query('SELECT pg_backend_pid() AS pid')).rows;
const postmaster = Number(fs.readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
const pgTicks = () => {
  let t = ticks(postmaster);
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = fs.readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === postmaster) t += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return t;
};

const receiver = fork(new URL('./receiver.mjs', import.meta.url), {
  env: { ...process.env, GW_N: String(N) },
});
const { port } = await new Promise((r) => receiver.once('message', r));
const done = new Promise((r) => receiver.on('message', (m) => m.done && r(m.done)));
const worker = fork(new URL('./worker.mjs', import.meta.url), {
  env: { ...process.env, GW_DATABASE_URL: url, GW_SECRET: randomBytes(24).toString('base64') },
});
await new Promise((r) => worker.once('message', r));

const body = JSON.stringify({ type: 'order.created', data: { pad: 'x'.repeat(1024 - 48) } });
let t0 = Date.now();
let c0 = process.cpuUsage();
let pg0 = pgTicks();
let w0 = ticks(worker.pid);
let r0 = own(receiver.pid);
const jobs = (start, count) =>
  Array.from({ length: count }, (_, i) => ({
    identifier: 'deliver',
    payload: {
      id: `msg_${start + i}`,
      origin: `http://127.0.0.1:${port}`,
      path: `/hook/${(start + i) % 10}`,
      body,
    },
  }));
let counted = N;
if (RATE === undefined) {
  for (let start = 0; start < N; start += 1000) await utils.addJobs(jobs(start, Math.min(1000, N - start)));
} else {
  const started = Date.now();
  const pending = [];
  let next = 0;
  let steady = false;
  while (next < N) {
    if (!steady && Date.now() - started >= WARMUP_MS) {
      steady = true;
      [t0, c0, pg0, w0, r0] = [
        Date.now(),
        process.cpuUsage(),
        pgTicks(),
        ticks(worker.pid),
        own(receiver.pid),
      ];
      counted = N - next;
    }
    const due = Math.min(N, Math.floor(((Date.now() - started) / 1000) * RATE));
    if (due > next) {
      pending.push(utils.addJobs(jobs(next, Math.min(1000, due - next))));
      next += Math.min(1000, due - next);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(pending);
}
const enqueued = Date.now();
const end = await done;
const c1 = process.cpuUsage(c0);
const pg1 = pgTicks();
const w1 = ticks(worker.pid);
const r1 = own(receiver.pid);
const us = (t) => ((t * 10_000) / counted).toFixed(1);
const secs = (end - t0) / 1000;
console.log(
  RATE === undefined
    ? `graphile-worker 0.17.3 sender: ${N} in ${secs.toFixed(2)} s = ${Math.round(N / secs)}/s (enqueue done at ${((enqueued - t0) / 1000).toFixed(2)} s)`
    : `graphile-worker 0.17.3 sender: ${N} offered at ${RATE}/s; steady state (after ${WARMUP_MS / 1000} s) ${counted} in ${secs.toFixed(2)} s`,
);
console.log(
  `  µs/delivery: worker ${us(w1 - w0)}  PostgreSQL ${us(pg1 - pg0)}  sender total ${us(w1 - w0 + pg1 - pg0)}  receiver ${us(r1 - r0)}  enqueue client ${((c1.user + c1.system) / counted).toFixed(1)}`,
);
worker.send('stop');
await new Promise((r) => worker.once('exit', r));
receiver.kill();
await utils.release();
await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
await admin.end();
