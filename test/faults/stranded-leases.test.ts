/**
 * Work a failover strands: the dispatcher commits asynchronously, so the new primary can lack
 * its last results. Deterministic here: the standby's replication runs through a proxy that the
 * test cuts after the claim reached the standby and before the results are written; the
 * results then commit on the old primary alone, which is killed, and the standby promoted. On
 * the new primary those rows are still leased to the dispatcher's claim, for the whole 60 s
 * lease. A dispatcher that reconnects hands back the rows leased to its own tokens that it no
 * longer holds, and they go out again (same webhook-id) within seconds, not after the lease.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import type { HookpostProcess } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { startHookpostOn } from './hookpost-on.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary, startStandby } from './pg-pair.js';
import { freeFixedPort } from './ports.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

const { tools, skip } = await preferredToolset();

describe('rows stranded by a failover', {
  skip,
}, () => {
  let root: string;
  let primary: PgNode;
  let standby: PgNode;
  let replication: CuttableProxy;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiUrl: string;
  const held: http.ServerResponse[] = [];
  let hold = true;

  before(async () => {
    root = await clusterRoot('hookpost-stranded-');
    primary = await startPrimary(tools!, 'a', path.join(root, 'a'), await freeFixedPort());
    replication = await startProxy(primary.port);
    // Asynchronous: with the link cut, a synchronous standby would hold every commit.
    standby = await startStandby(primary, 'b', path.join(root, 'b'), await freeFixedPort(), {
      replicateVia: replication.port,
    });
    receiver = await startReceiver((_req, res) => (hold ? held.push(res) : res.writeHead(200).end()));
    ({ hookpost, apiUrl } = await startHookpostOn(
      `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres`,
      root,
      {
        HOOKPOST_LEASE_SECONDS: '60',
        LOG_LEVEL: 'info',
      },
    ));
  });
  after(async () => {
    for (const res of held.splice(0)) res.destroy();
    if (hookpost && hookpost.child.exitCode === null) await hookpost.stop('SIGTERM');
    await receiver?.close();
    await replication?.close();
    for (const node of [primary, standby]) await node?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const api = async (route: string, body: unknown) => {
    const res = await fetch(`${apiUrl}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { id: string };
  };

  it('are handed back by the dispatcher when it reconnects, long before their lease ends', async () => {
    try {
      const endpointId = (await api('/v1/endpoints', { url: receiver.url })).id;
      const items = Array.from({ length: 5 }, (_, i) => ({
        endpoint_id: endpointId,
        event_type: 'o',
        payload: { i },
      }));
      await api('/v1/deliveries/batch', { items });
      await waitFor('five attempts in flight', () => held.length === 5);
      // The claim (rows leased to the dispatcher) has reached the standby.
      const onStandby = postgres(standby.url(), { max: 1, onnotice: () => {} });
      try {
        await waitFor('the claim replicated', async () => {
          const [row] = await onStandby<{ n: number }[]>`
            SELECT count(*)::int AS n FROM delivery_queue WHERE lease_expires_at IS NOT NULL`;
          return row!.n === 5;
        });
      } finally {
        await onStandby.end({ timeout: 1 });
      }
      await replication.cut();
      // The attempts succeed; their results commit on the primary alone.
      for (const res of held.splice(0)) res.writeHead(200).end();
      hold = false;
      const onPrimary = postgres(primary.url(), { max: 1, onnotice: () => {} });
      try {
        await waitFor('the results written on the primary', async () => {
          const [row] = await onPrimary<{ n: number }[]>`SELECT count(*)::int AS n FROM delivery_queue`;
          return row!.n === 0;
        });
      } finally {
        await onPrimary.end({ timeout: 1 });
      }

      await primary.kill();
      await standby.promote();
      const promotedAt = Date.now();
      // Without the hand-back they would wait out the 60 s lease and the reaper.
      await waitFor('the stranded deliveries sent again', () => receiver.requests.length >= 10, 15000);
      console.log(`# stranded deliveries sent again ${Date.now() - promotedAt} ms after the promotion`);
      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      assert.equal(new Set(ids).size, 5, 'the same five webhook-ids, each twice');
      assert.match(hookpost.output(), /handed back deliveries leased to this dispatcher/);
      assert.equal(hookpost.child.exitCode, null);
    } catch (error) {
      (error as Error).message +=
        `\n--- hookpost:\n${hookpost.output().slice(-5000)}\n--- b:\n${standby.output()}`;
      throw error;
    }
  });
});
