/**
 * `hookpost start` on the embedded PostgreSQL, stopped the way a terminal's Ctrl-C stops it: the
 * whole process group gets SIGINT while attempts are in flight. The database must outlive the
 * dispatcher's last result write (PostgreSQL's SIGINT is a fast shutdown that would cut the
 * pools), so nothing that was sent is sent again after a restart.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type HookpostProcess, runHookpost } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { freeFixedPort } from './ports.js';

describe('hookpost start: Ctrl-C with work in flight on the embedded database', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let receiver: Receiver;
  let delay = 400;
  const procs: HookpostProcess[] = [];

  before(async () => {
    receiver = await startReceiver((_req, res) => setTimeout(() => res.writeHead(200).end(), delay));
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-sigint-'));
    await chmod(dataDir, 0o755);
    env = {
      HOOKPOST_DATA_DIR: dataDir,
      PORT: String(await freeFixedPort()),
      HOOKPOST_EMBEDDED_PG_PORT: String(await freeFixedPort()),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_DISPATCH_CONCURRENCY: '8',
      // A lost result would be re-sent after 3 s instead of a minute (the reaper's backoff is
      // the retry policy's: kept short too).
      HOOKPOST_LEASE_SECONDS: '3',
      HOOKPOST_RETRY_BASE_SECONDS: '0.01',
      HOOKPOST_RETRY_CAP_SECONDS: '0.05',
      HOOKPOST_REQUEST_TIMEOUT_MS: '1000',
      HOOKPOST_POLL_INTERVAL_MS: '200',
    };
  });
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null) await p.stop('SIGKILL');
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const api = (method: string, route: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${env.PORT}${route}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  async function start(): Promise<HookpostProcess> {
    const proc = runHookpost(['start'], env, { detached: true });
    procs.push(proc);
    // The banner comes only once hookpost itself listens (not another test's server on the port).
    await proc.waitForOutput('hookpost is listening on', 60000);
    await waitFor(
      'the API',
      async () => (await api('GET', '/readyz').catch(() => undefined))?.status === 200,
      60000,
    );
    return proc;
  }

  it('exits 0, writes every result before the database stops, sends nothing twice', async () => {
    const first = await start();
    const ep = ((await (await api('POST', '/v1/endpoints', { url: receiver.url })).json()) as { id: string })
      .id;
    const items = Array.from({ length: 40 }, (_, n) => ({
      endpoint_id: ep,
      event_type: 'sigint',
      payload: { n },
    }));
    assert.equal((await api('POST', '/v1/deliveries/batch', { items })).status, 202);
    await waitFor('attempts in flight', () => receiver.requests.length >= 8, 30000);

    process.kill(-first.child.pid!, 'SIGINT'); // the whole group, as Ctrl-C in a terminal
    assert.equal(await first.exited, 0, first.output());
    assert.doesNotMatch(first.output(), /writing results failed|EPIPE|dropping results/);

    delay = 0;
    const second = await start();
    try {
      await waitFor(
        'all 40 delivered',
        async () => {
          const res = await api('GET', `/v1/deliveries?endpoint_id=${ep}&status=delivered&limit=100`);
          const list = (await res.json()) as { data: unknown[] };
          return list.data.length === 40;
        },
        30000,
      );
      // Longer than a lease: a result lost at shutdown would have been re-sent by now.
      await new Promise((r) => setTimeout(r, 3500));
    } finally {
      assert.equal(await second.stop('SIGTERM'), 0, second.output());
    }
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, 40);
    assert.equal(ids.length, 40, 'each delivery was sent exactly once');
  });
});
