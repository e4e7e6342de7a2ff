/**
 * kill -9 of PostgreSQL (every server process at once) while producers enqueue and the
 * dispatcher delivers: every 202 survives the crash, enqueue answers 503 database_unavailable
 * with Retry-After while the server is down (never a 500), the hookpost process survives, and
 * once the server is back everything accepted is delivered without restarting hookpost.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from '../../src/db/connect.js';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../../src/db/embedded.js';
import { type HookpostProcess, runHookpost } from '../cli/process.js';
import { type Receiver, startReceiver, TOKEN, waitFor } from '../helpers.js';
import { freeFixedPort } from './ports.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the server on an existing data directory, retrying while the killed one's memory is released. */
async function startServer(dataDir: string, port: number): Promise<EmbeddedDatabase> {
  for (let tries = 1; ; tries++) {
    try {
      return await startEmbeddedPostgres({ dataDir, port });
    } catch (error) {
      if (tries >= 20) throw error;
      await sleep(500);
    }
  }
}

describe('kill -9 of PostgreSQL mid-enqueue', () => {
  let dir: string;
  let pgPort: number;
  let pg: EmbeddedDatabase;
  let hookpost: HookpostProcess;
  let receiver: Receiver;
  let apiPort: number;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hookpost-pgkill-'));
    await chmod(dir, 0o755);
    pgPort = await freeFixedPort();
    pg = await startServer(dir, pgPort);
    receiver = await startReceiver();
    apiPort = await freeFixedPort();
    hookpost = runHookpost(['start'], {
      DATABASE_URL: pg.url,
      PORT: String(apiPort),
      HOOKPOST_ADMIN_TOKEN: TOKEN,
      HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
      HOOKPOST_DATA_DIR: path.join(dir, 'hookpost'),
      HOOKPOST_POLL_INTERVAL_MS: '200',
    });
  });
  after(async () => {
    if (hookpost.child.exitCode === null) await hookpost.stop('SIGKILL');
    await pg.stop().catch(() => {});
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  });

  const api = (method: string, route: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${apiPort}${route}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('loses no acknowledged delivery, answers 503 while down, recovers by itself', async () => {
    // The banner comes only once hookpost itself listens (not another test's server on the port).
    await hookpost.waitForOutput('hookpost is listening on', 60000);
    await waitFor(
      'the API',
      async () => (await api('GET', '/readyz').catch(() => undefined))?.status === 200,
      30000,
    );
    const ep = ((await (await api('POST', '/v1/endpoints', { url: receiver.url })).json()) as { id: string })
      .id;

    const accepted = new Set<string>();
    const statuses = new Map<number, number>();
    let slow503 = 0;
    let restartingAt = Number.POSITIVE_INFINITY;
    const durations: number[] = [];
    let retryAfterMissing = 0;
    let serial = 0;
    let producing = true;
    const producer = async () => {
      while (producing) {
        const items = Array.from({ length: 10 }, () => ({
          endpoint_id: ep,
          event_type: 'crash',
          event_id: `e${serial++}`,
          payload: { serial },
        }));
        const sent = Date.now();
        const res = await api('POST', '/v1/deliveries/batch', { items }).catch(() => undefined);
        const status = res?.status ?? 0;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 202) {
          const body = (await res!.json()) as { results: { deliveries: { id: string }[] }[] };
          for (const r of body.results) for (const d of r.deliveries) accepted.add(d.id);
        } else {
          await res?.body?.cancel();
          if (status === 503) {
            // While the server is down (not while it is starting up again, when a connection can be
            // accepted and then wait), a 503 comes within 2 s.
            if (sent < restartingAt) {
              durations.push(Date.now() - sent);
              if (Date.now() - sent > 2000) slow503++;
            }
            if (!res!.headers.get('retry-after')) retryAfterMissing++;
          }
          await sleep(50);
        }
      }
    };
    const producers = Array.from({ length: 4 }, producer);

    try {
      await waitFor('some accepted', () => accepted.size >= 200, 30000);
      process.kill(-pg.pid, 'SIGKILL'); // postmaster and every backend at once
      await sleep(2000);
      const acceptedBeforeRestart = accepted.size;
      restartingAt = Date.now();
      pg = await startServer(dir, pgPort);
      await waitFor('enqueue to work again', () => accepted.size >= acceptedBeforeRestart + 100, 30000);
    } catch (error) {
      throw new Error(
        `${(error as Error).message}; hookpost exit code ${hookpost.child.exitCode}:\n${hookpost.output()}`,
      );
    } finally {
      producing = false; // else the producers keep the test process alive after a failure
      await Promise.all(producers);
    }

    assert.equal(hookpost.child.exitCode, null, `hookpost survived the crash:\n${hookpost.output()}`);
    assert.equal(statuses.get(500) ?? 0, 0, `no 500s: ${JSON.stringify([...statuses])}`);
    assert.ok(
      (statuses.get(503) ?? 0) > 0,
      `503s while the database was down: ${JSON.stringify([...statuses])}`,
    );
    assert.equal(slow503, 0, `every 503 while down came within 2 s: ${durations.join(' ')} ms`);
    assert.equal(retryAfterMissing, 0, 'every 503 has Retry-After');

    const sql = connect(pg.url, { max: 1 });
    try {
      const ids = [...accepted];
      const [found] = await sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY(${ids}::text[])`;
      assert.equal(found!.n, ids.length, 'every delivery answered with 202 is stored');
    } finally {
      await sql.end({ timeout: 1 });
    }
    await waitFor(
      'every accepted delivery to arrive',
      () => new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size >= accepted.size,
      60000,
    );
  });
});
