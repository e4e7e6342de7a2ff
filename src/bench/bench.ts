/**
 * `hookpost bench`: the built-in load test. Runs a real `hookpost api` and a real
 * `hookpost dispatcher` process (the production topology) against a fresh database, a
 * signature-checking receiver process, enqueues through the public batch API, and compares with
 * the same signed POSTs sent straight from memory. Beside the rates it prints what each part
 * cost in CPU per delivery (see cost.ts).
 */

import type { Config } from '../config.js';
import { Sender } from '../dispatch/sender.js';
import { signatureHeader } from '../dispatch/signing.js';
import { secretKeyBytes } from '../endpoints/secrets.js';
import { type Logger, terminalLogs } from '../log.js';
import {
  type CostMeter,
  type CostPart,
  type CostRow,
  formatCostTable,
  ownCpuSeconds,
  startCostMeter,
} from './cost.js';
import { type DbWork, startDbWork } from './db-work.js';
import { HALF_FILTER } from './filter-load.js';
import { type Harness, startHarness } from './harness.js';
import { call, enqueueAll, now, payloadOf } from './load.js';
import { type PartnerMode, setUpPartner } from './partners.js';
import { BenchReceiver, quantile, type ReceiverStats } from './receiver.js';
import { type RssSampler, sampleRss } from './rss.js';

/**
 * Seconds at the start of a `--rate` run left out of the steady-state figures: the processes'
 * JIT warm-up and the plans made again after the ANALYZE below (lag spikes of 50 – 700 ms within
 * the first 2.5 s at 1,000/s, none after them).
 */
const WARMUP_SECONDS = 3;
/** When in the warm-up the tables are analyzed (see steadyTimer). */
const ANALYZE_AT_SECONDS = 1;

export interface BenchOptions {
  n: number;
  endpoints: number;
  payloadBytes: number;
  /** Offered load in deliveries/s; undefined = as fast as possible. */
  rate: number | undefined;
  durationSeconds: number;
  /** Enqueue everything first, then start the dispatcher on the full backlog and watch its memory. */
  drain: boolean;
  /** Ordering keys over the items (`k${i % K}`); undefined = unkeyed. */
  orderingKeys?: number | undefined;
  /**
   * Fan-out: `n` order events (filter-load.ts), each to every endpoint by subscription, of which
   * the first `filtered` have a three-clause filter that half of the events match. Undefined: each
   * item names one endpoint, round robin.
   */
  fanOut?: { filtered: number } | undefined;
  /** How the endpoints reach the receiver (partners.ts); undefined = plain HTTP, no auth, no proxy. */
  partner?: PartnerMode | undefined;
  /** Skip the no-queue ceiling run (always skipped with `partner`: it sends plain requests). */
  noCeiling?: boolean | undefined;
}

const fmt = (x: number, digits = 0) =>
  x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The machine's ceiling: the same signed POSTs from memory, same concurrency, no queue. */
async function measureCeiling(config: Config, receiver: BenchReceiver, keys: Buffer[], opts: BenchOptions) {
  const sender = new Sender({
    timeoutMs: config.requestTimeoutMs,
    snippetBytes: config.responseSnippetBytes,
    allowPrivateTargets: true,
    connectionsPerOrigin: config.dispatchConcurrency,
    userAgent: 'hookpost/bench',
  });
  const meter = startCostMeter(fixtureParts(receiver));
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
  await receiver.waitUntilCount(opts.n, 30_000);
  const cost = meter.stop();
  const stats = await receiver.stats();
  await sender.close();
  const last = latest(stats.arrivals.values());
  return { perSecond: opts.n / ((last - started) / 1000), seconds: (last - started) / 1000, cost };
}

/** The parts that are not hookpost: the receiver process and this process (the load client). */
function fixtureParts(receiver: BenchReceiver): CostPart[] {
  return [
    { name: 'receiver', system: false, cpuSeconds: () => receiver.cpuSeconds() },
    { name: 'bench client', system: false, cpuSeconds: ownCpuSeconds },
  ];
}

/** Every part of a queued run: hookpost's processes and its database, then the fixtures. */
function allParts(h: Harness, receiver: BenchReceiver, extra: CostPart[] = []): CostPart[] {
  const parts: CostPart[] = [
    { name: 'API', system: true, cpuSeconds: h.apiCpuSeconds },
    { name: 'dispatcher', system: true, cpuSeconds: h.dispatcherCpuSeconds },
  ];
  if (h.postgresCpuSeconds)
    parts.push({ name: 'PostgreSQL', system: true, cpuSeconds: h.postgresCpuSeconds });
  return [...parts, ...fixtureParts(receiver), ...extra];
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
  // A delivery nobody asked for: with filters, one their endpoint's filter should have kept back.
  let unexpected = 0;
  for (const id of stats.arrivals.keys()) if (!expected.has(id)) unexpected++;
  return { missing, unexpected, duplicates: stats.duplicates, badSignatures: stats.badSignatures };
}

function printCost(
  out: (line: string) => void,
  title: string,
  rows: CostRow[],
  deliveries: number,
  seconds: number,
  events?: number,
) {
  out(`  cost       CPU per delivery, ${title} (${fmt(seconds, 2)} s of wall time):`);
  for (const line of formatCostTable(rows, deliveries, seconds)) out(`             ${line}`);
  if (events === undefined) return;
  // A fan-out's figure to compare runs with and without filters: they create different numbers
  // of deliveries from the same events.
  const sum = (system: boolean) => rows.reduce((t, r) => t + (system && !r.system ? 0 : r.cpuSeconds), 0);
  out(
    `             per accepted event (${fmt(events)}): hookpost ${fmt((sum(true) * 1e6) / events, 1)} µs, ` +
      `all ${fmt((sum(false) * 1e6) / events, 1)} µs`,
  );
}

/** Runs the benchmark and prints its figures; returns the exit code (1 if anything was lost or wrong). */
export async function runBench(config: Config, log: Logger, opts: BenchOptions): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const partner = await setUpPartner(opts.partner);
  const receiver = await BenchReceiver.start(partner.receiverTls);
  const h = await startHarness(config, log);
  let code = 0;
  try {
    const endpointIds: string[] = [];
    const keys: Buffer[] = [];
    const filtered = new Set<string>();
    for (let i = 0; i < opts.endpoints; i++) {
      const filter = i < (opts.fanOut?.filtered ?? 0) ? { filter: HALF_FILTER } : {};
      const ep = (await call(h, 'POST', '/v1/endpoints', {
        tenant_id: 'bench',
        url: receiver.url(i),
        ...filter,
        ...partner.endpointFields,
      })) as {
        id: string;
        secret: string;
      };
      endpointIds.push(ep.id);
      keys.push(secretKeyBytes(ep.secret));
      if ('filter' in filter) filtered.add(ep.id);
    }
    receiver.setKeys(keys, opts.fanOut !== undefined);
    const total = opts.rate === undefined ? opts.n : Math.round(opts.rate * opts.durationSeconds);
    const what = opts.fanOut
      ? `${fmt(total)} events, each fanned out to ${opts.endpoints} endpoints (${opts.fanOut.filtered} with a ` +
        'three-clause filter half of them match)'
      : `${fmt(total)} deliveries to ${opts.endpoints} endpoints`;
    out(
      `hookpost bench: ${what}, ${opts.payloadBytes}-byte payloads, ` +
        `${opts.orderingKeys ? `${fmt(opts.orderingKeys)} ordering keys, ` : ''}` +
        `concurrency ${config.dispatchConcurrency}${opts.rate ? `, offered ${fmt(opts.rate)}/s for ${opts.durationSeconds} s` : ''}` +
        (opts.partner ? `, partner: ${opts.partner}` : ''),
    );
    if (!opts.drain) await h.startDispatcher(partner.dispatcherEnv);
    // Enqueue as a producer would: a key with deliveries:write bound to the tenant, so key
    // lookup and tenant scoping are part of what is measured.
    const producer = (await call(h, 'POST', '/v1/api-keys', {
      name: 'bench producer',
      scopes: ['deliveries:write'],
      tenant_id: 'bench',
    })) as { key: string };
    // The timed phase: first enqueue → last receipt. With --drain the dispatcher's own start-up
    // (loading node and its modules) is left out: its baseline is taken once it is ready.
    const meter = startCostMeter(allParts(h, receiver, partner.parts));
    // At a steady rate, the first seconds measure start-up (the dispatcher process loading,
    // connections to the receiver opening, the JIT compiling), not the steady state the figures
    // are about: lag and a second cost table leave them out.
    const warmup = opts.rate !== undefined && opts.durationSeconds > 2 * WARMUP_SECONDS;
    let steady = undefined as { meter: CostMeter; at: number } | undefined;
    // The database's work is counted over the steady state when there is one, else the whole run.
    let dbWork: Promise<DbWork> | undefined = warmup ? undefined : startDbWork(h.sql);
    // The statistics a long-running server has: autovacuum analyzes a table at the earliest a
    // minute after it changed, so through a short run the planner saw the fresh database's empty
    // tables, and the dispatcher's generic plans (planned once per connection) scanned the whole
    // deliveries table on every write: the run measured a first minute, not a steady state.
    // ANALYZE invalidates those plans: it runs early in the warm-up, and the steady phase starts
    // after the warm-up, once it is done.
    const analyzed = warmup
      ? new Promise((resolve) => setTimeout(resolve, ANALYZE_AT_SECONDS * 1000)).then(() => h.sql`ANALYZE`)
      : undefined;
    const steadyTimer = warmup
      ? setTimeout(() => {
          dbWork = analyzed!.then(() => {
            steady = { meter: startCostMeter(allParts(h, receiver, partner.parts)), at: now() };
            return startDbWork(h.sql);
          });
        }, WARMUP_SECONDS * 1000)
      : undefined;
    const fanOut = opts.fanOut && {
      endpointIndex: new Map(endpointIds.map((id, i) => [id, i])),
      filtered,
    };
    const enq = await enqueueAll(
      { api: h.api, token: producer.key },
      endpointIds,
      { ...opts, fanOut },
      total,
    );
    const expected = enq.acked.size;
    let drain: { started: number; rss: RssSampler } | undefined;
    if (opts.drain) {
      const started = now();
      drain = { started, rss: sampleRss((await h.startDispatcher(partner.dispatcherEnv)).pid!) };
      meter.rebase('dispatcher');
    }
    await receiver.waitUntilCount(expected, Math.max(60_000, expected * 2));
    const cost = meter.stop();
    clearTimeout(steadyTimer);
    const work = await dbWork; // the steady phase has begun once this settles
    const steadyCost = steady?.meter.stop();
    const stats = await receiver.stats();
    const last = latest(stats.arrivals.values());
    const rss = drain?.rss.stop();
    const lagsSince = (from: number) =>
      [...enq.acked].flatMap(([id, ack]) => {
        const at = stats.arrivals.get(id);
        return at === undefined || ack < from ? [] : [at - ack];
      });
    const lags = lagsSince(0);
    const steadyLags = warmup ? lagsSince(enq.started + WARMUP_SECONDS * 1000) : lags;
    const pcts = (values: number[]) =>
      `p50 ${fmt(quantile(values, 0.5), 1)} ms, p95 ${fmt(quantile(values, 0.95), 1)} ms, p99 ${fmt(quantile(values, 0.99), 1)} ms`;
    const enqSeconds = (enq.finished - enq.started) / 1000;
    const delSeconds = (last - enq.started) / 1000;
    out(
      `  enqueue    ${fmt(total)} in ${fmt(enqSeconds, 2)} s = ${fmt(total / enqSeconds)}/s (public batch API)` +
        (opts.fanOut ? `: ${fmt(expected)} deliveries` : ''),
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
      `  check      ${fmt(verdict.missing)} missing, ${fmt(verdict.duplicates)} duplicates, ${fmt(verdict.badSignatures)} bad signatures` +
        (verdict.unexpected ? `, ${fmt(verdict.unexpected)} not expected` : ''),
    );
    if (opts.fanOut?.filtered)
      out(
        `  filters    ${fmt(enq.filtered)} deliveries not created by a filter, ${fmt(enq.wrongFiltered)} events filtered wrongly`,
      );
    if (
      verdict.missing + verdict.unexpected + verdict.duplicates + verdict.badSignatures + enq.wrongFiltered >
      0
    )
      code = 1;
    const events = opts.fanOut ? total : undefined;
    printCost(out, 'queued run, first enqueue → last receipt', cost, stats.arrivals.size, delSeconds, events);
    if (steady && steadyCost) {
      let arrived = 0;
      for (const at of stats.arrivals.values()) if (at >= steady.at) arrived++;
      const title = `steady state, after ${WARMUP_SECONDS} s of warm-up → last receipt`;
      printCost(out, title, steadyCost, arrived, (last - steady.at) / 1000);
    }
    if (!h.postgresCpuSeconds)
      out('             (PostgreSQL is not on this machine: its CPU is not counted)');
    if (work) {
      let counted = stats.arrivals.size;
      if (steady) {
        counted = 0;
        for (const at of stats.arrivals.values()) if (at >= steady.at) counted++;
      }
      const lines = await work.stop(counted);
      out(`  database   ${steady ? 'steady state' : 'whole run'}: ${lines[0]}`);
      for (const line of lines.slice(1)) out(`             ${line}`);
    }
    if (opts.rate === undefined && !opts.partner && !opts.noCeiling) {
      await h.stopDispatcher();
      receiver.reset();
      const ceiling = await measureCeiling(config, receiver, keys, { ...opts, n: expected });
      const throughput = drain
        ? stats.arrivals.size / ((last - drain.started) / 1000)
        : stats.arrivals.size / delSeconds;
      out(
        `  ceiling    ${fmt(expected)} in ${fmt(ceiling.seconds, 2)} s = ${fmt(ceiling.perSecond)}/s (same signed POSTs from memory, no queue)`,
      );
      out(`  ratio      ${fmt(throughput / ceiling.perSecond, 2)} of the ceiling`);
      printCost(out, 'ceiling run, no queue', ceiling.cost, expected, ceiling.seconds);
    }
  } finally {
    await h.close();
    // After the report, not in it: the children's warnings (child-logs.ts).
    h.childLogs.print(out, terminalLogs(config));
    await receiver.close();
    await partner.close();
  }
  return code;
}
