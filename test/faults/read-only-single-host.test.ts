/**
 * A single-host DATABASE_URL whose address comes to point at a standby (a managed database's DNS
 * name still naming the old primary, now in recovery; a proxy on a demoted node), then at a
 * primary again. Nothing in the URL asks for a session that can write, so hookpost connects to
 * the standby: every write is refused with 25006, which must be a 503 database_unavailable +
 * Retry-After, never a 500. And a connection that got 25006 must not be kept: once a primary is
 * at that address again, requests are accepted and deliveries go out without a restart (kept,
 * the pool's connections stayed on the standby, refusing every write until they idled out).
 * /readyz says not ready while the server is read-only (it said ready: migrations applied).
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { HookpostProcess } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { startHookpostOn } from './hookpost-on.js';
import { clusterRoot, type PgNode, preferredToolset, startPrimary, startStandby } from './pg-pair.js';
import { freeFixedPort } from './ports.js';
import { type CuttableProxy, startProxy } from './tcp-proxy.js';

const { tools, skip } = await preferredToolset();

describe('a single-host URL that points at a standby, then at a primary again', { skip }, () => {
  let root: string;
  let primary: PgNode;
  let standby: PgNode;
  let address: CuttableProxy;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiUrl: string;
  let endpointId: string;

  before(async () => {
    root = await clusterRoot('hookpost-ro-host-');
    primary = await startPrimary(tools!, 'a', path.join(root, 'a'), await freeFixedPort());
    standby = await startStandby(primary, 'b', path.join(root, 'b'), await freeFixedPort());
    address = await startProxy(primary.port);
    receiver = await startReceiver();
    ({ hookpost, apiUrl } = await startHookpostOn(address.via(primary.url()), root));
    const res = await fetch(`${apiUrl}/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    endpointId = ((await res.json()) as { id: string }).id;
  });
  after(async () => {
    if (hookpost && hookpost.child.exitCode === null) await hookpost.stop('SIGTERM');
    await address?.close();
    await receiver?.close();
    for (const node of [standby, primary]) await node?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  let serial = 0;
  const enqueue = async () => {
    const sentAt = Date.now();
    const res = await fetch(`${apiUrl}/v1/deliveries`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint_id: endpointId, event_type: 'ro.test', payload: { n: serial++ } }),
      signal: AbortSignal.timeout(10000),
    });
    const body = (await res.json()) as { error?: { code: string } };
    return {
      status: res.status,
      code: body.error?.code,
      retryAfter: res.headers.get('retry-after'),
      ms: Date.now() - sentAt,
    };
  };

  it('answers 503 while the address is a standby, and 202 once it is a primary again', async () => {
    try {
      assert.equal((await enqueue()).status, 202);
      await waitFor('the first delivery', () => receiver.requests.length >= 1, 15000);

      // The address now leads to the standby; the connections to the old server broke.
      address.retarget(standby.port);
      await address.cut();
      await address.restore();
      const onStandby = [];
      for (let i = 0; i < 8; i++) onStandby.push(await enqueue());
      console.log(
        `# standby behind a single-host URL: ${JSON.stringify(onStandby.map((a) => `${a.status} ${a.ms} ms`))}`,
      );
      for (const a of onStandby) {
        assert.equal(a.status, 503, JSON.stringify(a));
        assert.equal(a.code, 'database_unavailable');
        assert.ok(Number(a.retryAfter) > 0);
        assert.ok(a.ms < 2000, `${a.ms} ms`);
      }
      // Not ready on a standby: a load balancer stops sending requests here.
      const ready = await fetch(`${apiUrl}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(((await ready.json()) as { error: { message: string } }).error.message, /read-only/);

      // A primary at that address again; nothing cuts the sessions hookpost has on the standby.
      // Counted before the one enqueue that will be accepted: it may go out before that answer.
      const received = receiver.requests.length;
      address.retarget(primary.port);
      const backAt = Date.now();
      let accepted: Awaited<ReturnType<typeof enqueue>> | undefined;
      await waitFor(
        '202 again',
        async () => {
          accepted = await enqueue();
          return accepted.status === 202;
        },
        10000,
      );
      await waitFor('deliveries going out again', () => receiver.requests.length > received, 15000);
      // Ready again: a pooled session still on the standby answers one check read_only and is
      // closed by it (kept, it answered read_only until it idled out).
      const readyAnswers: number[] = [];
      await waitFor(
        '/readyz ready again',
        async () => {
          readyAnswers.push((await fetch(`${apiUrl}/readyz`)).status);
          return readyAnswers.at(-1) === 200;
        },
        5000,
      );
      assert.ok(readyAnswers.length <= 11, `/readyz answers: ${readyAnswers.join(' ')}`);
      console.log(`# primary at the address again: 202 after ${Date.now() - backAt} ms`);
      assert.equal(hookpost.child.exitCode, null, 'hookpost is still running');
      assert.doesNotMatch(hookpost.output(), /"statusCode":500|internal_error/);
    } catch (error) {
      (error as Error).message += `\n--- hookpost:\n${hookpost.output().slice(-5000)}`;
      throw error;
    }
  });
});
