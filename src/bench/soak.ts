/**
 * `hookpost bench --soak --duration S --rate R`: a steady load for a long time with a short
 * retention window, printing every window what a long-running installation cares about:
 * database size, deliveries/s, lag p99, lock waits seen in pg_stat_activity and the
 * dispatcher's RSS. After the warm-up (the retention window filling up) the size should level
 * off and the rest stay where they started. A command that prints figures, not a test.
 */
import { writeFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import { secretKeyBytes } from '../endpoints/secrets.js';
import { type Logger, terminalLogs } from '../log.js';
import { startHarness } from './harness.js';
import { call, now, payloadOf } from './load.js';
import { BenchReceiver, quantile } from './receiver.js';
import { soakChartSvg } from './soak-chart.js';

export interface SoakOptions {
  rate: number;
  durationSeconds: number;
  endpoints: number;
  payloadBytes: number;
  /** Retention window for the soak (default: a fifth of the duration). */
  retentionSeconds: number | undefined;
  /** Where the per-window figures go (CSV; an SVG chart beside it). */
  csvPath: string;
}

export interface SoakSample {
  t: number;
  dbBytes: number;
  perSecond: number;
  lagP99Ms: number;
  lockWaits: number;
  maxLockWaitMs: number;
  rssMiB: number;
  queued: number;
  partitions: number;
}

const WINDOW_SECONDS = 10;
const AUTOVACUUM_NAPTIME_SECONDS = 60;
const fmt = (x: number, digits = 0) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function rssMiB(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? 0) / 1024;
}

export async function runSoak(config: Config, log: Logger, opts: SoakOptions): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const retention = opts.retentionSeconds ?? Math.max(30, Math.round(opts.durationSeconds / 5));
  const partitionSeconds = Math.max(1, Math.round(retention / 8));
  const passSeconds = Math.max(1, Math.round(partitionSeconds / 3));
  // Size grows until the first rows and partitions fall out of the window and autovacuum (one
  // naptime, 60 s by default) has made their space reusable; then it levels off.
  const warmupSeconds =
    retention + 2 * partitionSeconds + 2 * passSeconds + AUTOVACUUM_NAPTIME_SECONDS + WINDOW_SECONDS;
  const receiver = await BenchReceiver.start();
  const h = await startHarness(config, log);
  const samples: SoakSample[] = [];
  let lost = 0;
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
    const dispatcher = await h.startDispatcher({
      HOOKPOST_RETENTION_DAYS: String(retention / 86_400),
      HOOKPOST_PAYLOAD_RETENTION_DAYS: String(retention / 86_400),
      HOOKPOST_PARTITION_INTERVAL_SECONDS: String(partitionSeconds),
      HOOKPOST_PARTITIONS_AHEAD: '4',
      HOOKPOST_RETENTION_INTERVAL_SECONDS: String(passSeconds),
    });
    out(
      `hookpost bench --soak: ${fmt(opts.rate)}/s for ${opts.durationSeconds} s to ${opts.endpoints} endpoints, ` +
        `${opts.payloadBytes}-byte payloads; retention ${retention} s, ${partitionSeconds}-s attempt partitions, ` +
        `pass every ${passSeconds} s; warm-up ${warmupSeconds} s`,
    );
    out(
      '     t  db MiB  deliv/s  lag p99 ms  lock waits>100ms (max ms)  dispatcher RSS MiB  queued  partitions',
    );

    // The producer: paced batches; acked ids wait here until their arrival is seen.
    const acked = new Map<string, number>();
    const started = now();
    let sent = 0;
    let producing = true;
    const inFlight = new Set<Promise<void>>();
    const producer = (async () => {
      while (producing) {
        const due = Math.floor(((now() - started) / 1000) * opts.rate);
        if (due > sent) {
          const count = Math.min(1000, due - sent);
          const first = sent;
          sent += count;
          const items = Array.from(
            { length: count },
            (_, k) =>
              `{"endpoint_id":"${endpointIds[(first + k) % endpointIds.length]}","event_type":"soak","payload":${payloadOf(first + k, opts.payloadBytes)}}`,
          );
          const p = call(h, 'POST', '/v1/deliveries/batch', `{"items":[${items.join(',')}]}`).then((body) => {
            const at = now();
            for (const r of (body as { results: { message_id: string }[] }).results)
              acked.set(r.message_id, at);
          });
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    // Lock waits: sampled every 250 ms; a backend waiting on a lock in a statement that has run
    // for more than 100 ms counts (pg_stat_activity has no wait start, so this is an upper bound).
    let lockWaits = 0;
    let maxLockWaitMs = 0;
    const lockSampler = setInterval(() => {
      void h.sql<{ n: number; max_ms: number | null }[]>`
        SELECT count(*)::int AS n, max(extract(epoch FROM now() - query_start) * 1000)::float8 AS max_ms
        FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'
          AND now() - query_start > interval '100 milliseconds'`
        .then(([row]) => {
          lockWaits += row!.n;
          maxLockWaitMs = Math.max(maxLockWaitMs, row!.max_ms ?? 0);
        })
        .catch(() => {});
    }, 250);

    const pending: [string, number][] = [];
    for (let t = WINDOW_SECONDS; t <= opts.durationSeconds; t += WINDOW_SECONDS) {
      await new Promise((r) => setTimeout(r, started + t * 1000 - now()));
      const taken = await receiver.take();
      const lags: number[] = [];
      for (const arrival of [...pending.splice(0), ...taken.arrivals]) {
        const ack = acked.get(arrival[0]);
        // The API answer may come a moment after the delivery: match it next window.
        if (ack === undefined) pending.push(arrival);
        else {
          lags.push(Math.max(0, arrival[1] - ack));
          acked.delete(arrival[0]);
        }
      }
      const [db] = await h.sql<{ bytes: number; queued: number; partitions: number }[]>`
        SELECT pg_database_size(current_database())::float8 AS bytes,
               (SELECT count(*) FROM delivery_queue)::int AS queued,
               (SELECT count(*) FROM pg_inherits WHERE inhparent = 'delivery_attempts'::regclass)::int AS partitions`;
      const sample: SoakSample = {
        t,
        dbBytes: db!.bytes,
        perSecond: taken.arrivals.length / WINDOW_SECONDS,
        lagP99Ms: quantile(lags, 0.99),
        lockWaits,
        maxLockWaitMs,
        rssMiB: await rssMiB(dispatcher.pid!),
        queued: db!.queued,
        partitions: db!.partitions,
      };
      lockWaits = 0;
      maxLockWaitMs = 0;
      samples.push(sample);
      out(
        `${String(t).padStart(6)}  ${fmt(sample.dbBytes / 2 ** 20, 1).padStart(6)}  ${fmt(sample.perSecond).padStart(7)}  ` +
          `${fmt(sample.lagP99Ms, 1).padStart(10)}  ${`${sample.lockWaits} (${fmt(sample.maxLockWaitMs)})`.padStart(25)}  ` +
          `${fmt(sample.rssMiB, 1).padStart(18)}  ${String(sample.queued).padStart(6)}  ${String(sample.partitions).padStart(10)}`,
      );
    }
    producing = false;
    clearInterval(lockSampler);
    await producer;
    await Promise.all(inFlight);
    const final = await receiver.take();
    for (const [id] of final.arrivals) acked.delete(id);
    for (const [id] of pending) acked.delete(id);
    // What is still unacknowledged by an arrival a few seconds after the load stopped is lost.
    await new Promise((r) => setTimeout(r, 3000));
    for (const [id] of (await receiver.take()).arrivals) acked.delete(id);
    lost = acked.size;
    const errors = await receiver.take();
    summarize(out, samples, warmupSeconds, sent, lost, errors.duplicates, errors.badSignatures);
  } finally {
    await h.close();
    // After the report, not in it: the children's warnings (child-logs.ts).
    h.childLogs.print(out, terminalLogs(config));
    await receiver.close();
  }
  const header =
    't_seconds,db_bytes,deliveries_per_second,lag_p99_ms,lock_waits_over_100ms,max_lock_wait_ms,dispatcher_rss_mib,queued,partitions';
  const rows = samples.map((s) =>
    [
      s.t,
      s.dbBytes,
      s.perSecond,
      s.lagP99Ms.toFixed(1),
      s.lockWaits,
      s.maxLockWaitMs.toFixed(0),
      s.rssMiB.toFixed(1),
      s.queued,
      s.partitions,
    ].join(','),
  );
  await writeFile(opts.csvPath, `${header}\n${rows.join('\n')}\n`);
  const svgPath = `${opts.csvPath.replace(/\.csv$/, '')}.svg`;
  await writeFile(svgPath, soakChartSvg(samples, warmupSeconds));
  out(`  figures    ${opts.csvPath}, chart ${svgPath}`);
  return lost > 0 ? 1 : 0;
}

function summarize(
  out: (line: string) => void,
  samples: SoakSample[],
  warmupSeconds: number,
  sent: number,
  lost: number,
  duplicates: number,
  badSignatures: number,
) {
  const steady = samples.filter((s) => s.t > warmupSeconds);
  out(
    `  check      ${fmt(sent)} sent, ${fmt(lost)} lost, ${fmt(duplicates)} duplicates, ${fmt(badSignatures)} bad signatures`,
  );
  if (steady.length < 6) {
    out(`  verdict    too short: ${steady.length} windows after the ${warmupSeconds}-s warm-up (need 6)`);
    return;
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = steady.slice(0, 3);
  const last = steady.slice(-3);
  // The level is the median after warm-up: vacuum makes the size a saw-tooth around it.
  const sizes = steady.map((s) => s.dbBytes);
  const level = [...sizes].sort((a, b) => a - b)[Math.floor(sizes.length / 2)]!;
  const sizeSpread = Math.max(...sizes.map((b) => Math.abs(b - level) / level));
  const rateChange = Math.abs(mean(last.map((s) => s.perSecond)) / mean(first.map((s) => s.perSecond)) - 1);
  const lagStart = mean(first.map((s) => s.lagP99Ms));
  const lagEnd = mean(last.map((s) => s.lagP99Ms));
  const rssStart = first[0]!.rssMiB;
  const rssEnd = last.at(-1)!.rssMiB;
  const waits = steady.reduce((a, s) => a + s.lockWaits, 0);
  const maxWait = Math.max(...samples.map((s) => s.maxLockWaitMs));
  const verdict = (ok: boolean) => (ok ? 'ok' : 'OVER');
  out(
    `  size       after warm-up ${fmt(level / 2 ** 20, 1)} MiB (median), at most ${fmt(sizeSpread * 100, 1)}% away from it (${verdict(sizeSpread <= 0.1)}, limit 10%)`,
  );
  out(
    `  rate       ${fmt(mean(first.map((s) => s.perSecond)))}/s at the start, ${fmt(mean(last.map((s) => s.perSecond)))}/s at the end: ${fmt(rateChange * 100, 1)}% (${verdict(rateChange <= 0.1)})`,
  );
  out(
    `  lag p99    ${fmt(lagStart, 1)} ms at the start, ${fmt(lagEnd, 1)} ms at the end: ${fmt((lagEnd / lagStart - 1) * 100, 1)}% (${verdict(lagEnd <= lagStart * 1.1)})`,
  );
  out(
    `  locks      ${waits} samples of a lock wait over 100 ms after warm-up, longest seen ${fmt(maxWait)} ms over the whole run`,
  );
  out(`  memory     dispatcher RSS ${fmt(rssStart, 1)} MiB after warm-up, ${fmt(rssEnd, 1)} MiB at the end`);
}
