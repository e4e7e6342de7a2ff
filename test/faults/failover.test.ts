/**
 * Failover as operators meet it, against real servers: a primary with a synchronous standby,
 * `hookpost start` on a multi-host URL that lists the standby first, a steady load of callers
 * that retry with the same event_id, and a receiver.
 * 1. `kill -9` of the primary's postmaster, a few seconds with no primary, `pg_ctl promote` of the
 *    standby: while there is no primary every request is answered 503 + Retry-After within 2 s,
 *    never 500; requests are accepted again within 5 s of the promotion; every acknowledged
 *    delivery is on the new primary and delivered within 30 s of it (rows stranded by the lost
 *    asynchronous commits are handed back, not left to their 60 s lease); duplicates only among
 *    what was in flight at the kill; hookpost never exits; its log says so once.
 * 2. A planned switchover (the old standby's replacement takes over after a clean stop of the
 *    primary): no failed request beyond a short 503 window, no duplicate.
 * Figures for docs/high-availability.md are printed as `# …` lines.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import type { HookpostProcess } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { startHookpostOn } from './hookpost-on.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary, startStandby } from './pg-pair.js';
import { freeFixedPort } from './ports.js';
import { type Answer, byStatus, type SteadyLoad, sentBetween, startSteadyLoad } from './steady-load.js';

const { tools, skip } = await preferredToolset();
const CONCURRENCY = 16;

/** Receipts per webhook-id, and the first receipt's time of each. */
function receipts(receiver: Receiver) {
  const first = new Map<string, number>();
  const count = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = String(r.headers['webhook-id']);
    count.set(id, (count.get(id) ?? 0) + 1);
    if (!first.has(id)) first.set(id, r.at);
  }
  const duplicated = [...count].filter(([, n]) => n > 1).map(([id]) => id);
  return { first, count, duplicated };
}

const slowest = (answers: Answer[]) => Math.max(0, ...answers.map((a) => a.answeredAt - a.sentAt));

describe(`failover (${tools?.source})`, { skip }, () => {
  let root: string;
  let primary: PgNode;
  let standby: PgNode;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiUrl: string;
  let endpointId: string;
  const loads: SteadyLoad[] = [];

  before(async () => {
    root = await clusterRoot('hookpost-failover-');
    primary = await startPrimary(tools!, 'a', path.join(root, 'a'), await freeFixedPort());
    standby = await startStandby(primary, 'b', path.join(root, 'b'), await freeFixedPort(), {
      synchronous: true,
    });
    receiver = await startReceiver();
    // The standby first: the patched postgres.js skips it (read-write, hookpost's default here).
    ({ hookpost, apiUrl } = await startHookpostOn(
      `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres`,
      root,
      {
        HOOKPOST_DISPATCH_CONCURRENCY: String(CONCURRENCY),
        LOG_LEVEL: 'info',
      },
    ));
    const res = await fetch(`${apiUrl}/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    endpointId = ((await res.json()) as { id: string }).id;
  });
  after(async () => {
    for (const load of loads) await load.stop();
    if (hookpost && hookpost.child.exitCode === null) await hookpost.stop('SIGTERM');
    await receiver?.close();
    for (const node of [primary, standby]) await node?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** Fails with hookpost's and the servers' logs attached, which is what a failure needs. */
  const withLogs = async (work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      (error as Error).message +=
        `\n--- hookpost (exit ${hookpost.child.exitCode}):\n${hookpost.output().slice(-6000)}` +
        `\n--- ${primary.name}:\n${primary.output()}\n--- ${standby.name}:\n${standby.output()}`;
      throw error;
    }
  };

  const delivered = (load: SteadyLoad) => {
    const { first } = receipts(receiver);
    return [...load.accepted].every((id) => first.has(id));
  };

  /** Waits until every acknowledged delivery arrived; on a timeout says where the others are. */
  const waitDelivered = async (load: SteadyLoad, timeoutMs: number, node: PgNode) => {
    try {
      await waitFor('every acknowledged delivery delivered', () => delivered(load), timeoutMs);
    } catch (error) {
      const { first } = receipts(receiver);
      const missing = [...load.accepted].filter((id) => !first.has(id));
      const sql = postgres(node.url(), { max: 1, onnotice: () => {} });
      try {
        const rows = await sql`
          SELECT d.status, q.lease_expires_at IS NOT NULL AS leased, q.next_attempt_at < now() AS due,
                 d.attempt_count, count(*)::int AS n
          FROM deliveries d LEFT JOIN delivery_queue q ON q.delivery_id = d.id
          WHERE d.message_id = ANY(${missing.slice(0, 1000)}::text[]) GROUP BY 1, 2, 3, 4`;
        (error as Error).message += `: ${missing.length} missing, ${JSON.stringify(rows)}`;
      } finally {
        await sql.end({ timeout: 1 });
      }
      throw error;
    }
  };

  it('kill -9 of the primary, a few seconds without one, promotion of the synchronous standby', async () => {
    await withLogs(async () => {
      // About 100 deliveries a second (4 callers, 5 items every 200 ms).
      const load = startSteadyLoad({
        baseUrl: apiUrl,
        token: TOKEN,
        endpointId,
        prefix: 'kill',
        intervalMs: 200,
      });
      loads.push(load);
      await waitFor(
        'a steady flow',
        () => load.accepted.size >= 300 && receiver.requests.length >= 200,
        60000,
      );
      const logBefore = hookpost.output().length;

      await primary.kill(); // resolves once its last process is gone: no commit after this
      const killedAt = Date.now();
      // A few seconds with no primary, while the callers keep sending.
      await waitFor('three seconds without a primary', () => Date.now() - killedAt >= 3000, 10000);
      const promotingAt = Date.now(); // requests sent from here on may find the new primary
      await standby.promote();
      const promotedAt = Date.now();
      await waitFor(
        'an accepted request after the promotion',
        () => load.answers.some((a) => a.sentAt >= promotedAt && a.status === 202),
        15000,
      );
      await load.stop(); // what was acknowledged is now fixed
      await waitDelivered(load, 30000 - (Date.now() - promotedAt), standby);
      const allDeliveredAt = Date.now();

      // A request sent just before the promotion may still be waiting for a connection when the
      // standby starts taking writes, and be accepted: that is not an answer without a primary.
      const gap = sentBetween(load.answers, killedAt, promotingAt).filter(
        (a) => !((a.status === 200 || a.status === 202) && a.answeredAt >= promotingAt),
      );
      const before = load.answers.filter((a) => a.sentAt < killedAt && a.answeredAt >= killedAt);
      const firstBack = Math.min(
        ...load.answers.filter((a) => a.sentAt >= promotedAt && a.status === 202).map((a) => a.answeredAt),
      );
      const { first, duplicated } = receipts(receiver);
      const receivedJustBefore = [...first.values()].filter(
        (t) => t >= killedAt - 1000 && t < killedAt,
      ).length;
      console.log(
        `# kill -9: ${gap.length} requests without a primary ${JSON.stringify(byStatus(gap))}, slowest ${slowest(gap)} ms; ` +
          `in flight at the kill ${JSON.stringify(byStatus(before))}; first 202 ${firstBack - promotedAt} ms after the promotion; ` +
          `all ${load.accepted.size} acknowledged delivered ${allDeliveredAt - promotedAt} ms after it; ` +
          `${duplicated.length} sent twice (${receivedJustBefore} received in the second before the kill); ` +
          `${
            hookpost
              .output()
              .slice(logBefore)
              .match(/"released":\d+/g)
              ?.join(' ') ?? 'nothing'
          } handed back`,
      );

      assert.equal(hookpost.child.exitCode, null, 'hookpost is still running');
      assert.ok(gap.length > 0, 'callers sent requests while there was no primary');
      assert.deepEqual(
        Object.keys(byStatus(gap)),
        ['503'],
        `only 503 without a primary: ${JSON.stringify(byStatus(gap))}`,
      );
      assert.ok(slowest(gap) < 2000, `each 503 within 2 s (slowest ${slowest(gap)} ms)`);
      assert.ok(gap.every((a) => Number(a.retryAfter) > 0 && a.code === 'database_unavailable'));
      assert.ok(
        load.answers.every((a) => a.status === 200 || a.status === 202 || a.status === 503),
        `no 500 and no unanswered request: ${JSON.stringify(byStatus(load.answers))}`,
      );
      assert.ok(
        firstBack - promotedAt < 5000,
        `accepted again ${firstBack - promotedAt} ms after the promotion`,
      );
      assert.ok(allDeliveredAt - promotedAt < 30000);

      // Every acknowledged delivery is on the new primary (synchronous replication).
      const sql = postgres(standby.url(), { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM deliveries WHERE id = ANY(${[...load.deliveries]}::text[])`;
        assert.equal(row!.n, load.deliveries.size, 'every delivery answered 2xx is stored');
      } finally {
        await sql.end({ timeout: 1 });
      }

      // Duplicates only among what was in flight: first sent shortly before the kill or after it,
      // and no more than the dispatcher holds (its buffer is twice its concurrency).
      const early = duplicated.filter((id) => first.get(id)! < killedAt - 2000);
      assert.deepEqual(early, [], 'nothing settled well before the kill was sent again');
      assert.ok(duplicated.length <= 2 * CONCURRENCY, `${duplicated.length} duplicates`);

      const log = hookpost.output().slice(logBefore);
      const outages = log.match(/database unavailable/g)?.length ?? 0;
      assert.equal(outages, 1, `one line for the outage:\n${log}`);
      assert.match(log, /database available again/);
    });
  });

  it('a planned switchover: a short 503 window, nothing failed or sent twice', async () => {
    await withLogs(async () => {
      // A new standby of the new primary where the old one was (same port: the URL is unchanged).
      const old = primary;
      await rm(old.dataDir, { recursive: true, force: true });
      const next = await startStandby(standby, 'c', path.join(root, 'c'), old.port, { synchronous: true });
      primary = standby; // the names follow the roles from here on
      standby = next;

      const load = startSteadyLoad({
        baseUrl: apiUrl,
        token: TOKEN,
        endpointId,
        prefix: 'switch',
        intervalMs: 200,
      });
      loads.push(load);
      await waitFor('a steady flow', () => load.accepted.size >= 200, 60000);
      const receivedBefore = receiver.requests.length;

      const stoppedAt = Date.now();
      await primary.stop(); // a clean stop: the standby has every commit
      await standby.promote();
      const promotedAt = Date.now();
      // The old primary follows the new one (as Patroni makes it do).
      await primary.followOnStart(standby);
      await primary.start();
      await waitFor(
        'an accepted request after the promotion',
        () => load.answers.some((a) => a.sentAt >= promotedAt && a.status === 202),
        15000,
      );
      await load.stop();
      await waitDelivered(load, 30000, standby);

      const failed = load.answers.filter((a) => a.status !== 200 && a.status !== 202);
      const window = failed.length === 0 ? 0 : Math.max(...failed.map((a) => a.answeredAt)) - stoppedAt;
      const duplicated = receipts(receiver).duplicated.filter((id) => load.accepted.has(id));
      console.log(
        `# switchover: stop to promotion ${promotedAt - stoppedAt} ms; ${failed.length} of ${load.answers.length} ` +
          `answers not 2xx ${JSON.stringify(byStatus(failed))}, the last ${window} ms after the stop; ` +
          `${receiver.requests.length - receivedBefore} received since, ${duplicated.length} sent twice`,
      );
      assert.equal(hookpost.child.exitCode, null, 'hookpost is still running');
      assert.ok(
        failed.every((a) => a.status === 503 && a.answeredAt >= stoppedAt),
        `only 503s, and only once the stop began: ${JSON.stringify(byStatus(failed))}`,
      );
      assert.ok(window < promotedAt - stoppedAt + 2000, `the 503 window closed ${window} ms after the stop`);
      assert.deepEqual(duplicated, [], 'nothing sent twice');
    });
  });
});
