/**
 * Retention as the dispatchers run it: with a window of 0.0002 days (17 s) and 2-second attempt
 * partitions, delivered and dead-lettered deliveries past the window go with their attempts and
 * messages, while queued and recent ones stay, and a fan-out message stays until its last
 * delivery is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics/registry.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  waitFor,
} from '../helpers.js';
import { parsePrometheusText } from '../metrics/prom-text.js';

const WINDOW_MS = 0.0002 * 86_400_000;
const RETENTION_ENV = {
  HOOKPOST_RETENTION_DAYS: '0.0002',
  HOOKPOST_PARTITION_INTERVAL_SECONDS: '2',
  HOOKPOST_PARTITIONS_AHEAD: '5',
  HOOKPOST_RETENTION_INTERVAL_SECONDS: '0.3',
  HOOKPOST_RETENTION_PAUSE_MS: '0',
  // The flaky endpoint keeps retrying (queued) without its circuit opening or running out of attempts.
  HOOKPOST_MAX_ATTEMPTS: '10000',
  HOOKPOST_BREAKER_THRESHOLD: '100000',
  HOOKPOST_RETRY_BASE_SECONDS: '0.3',
  HOOKPOST_RETRY_CAP_SECONDS: '0.6',
  HOOKPOST_POLL_INTERVAL_MS: '50',
};

describe('retention pass in the dispatchers', () => {
  let db: TestDatabase;
  let ok: Receiver;
  let refusing: Receiver;
  let flaky: Receiver;
  const flakyState = { status: 503 };
  before(async () => {
    db = await createTestDatabase();
    ok = await startReceiver();
    refusing = await startReceiver((_req, res) => res.writeHead(400).end('no'));
    flaky = await startReceiver((_req, res) => res.writeHead(flakyState.status).end('later'));
  });
  after(async () => {
    await Promise.all([ok.close(), refusing.close(), flaky.close()]);
    await db.drop();
  });

  it('removes settled deliveries, attempts and messages past the window; keeps queued and recent ones', async () => {
    const metrics = createMetrics({ sql: db.sql, log: createLogger('silent'), maxAgeMs: 0 });
    const t = await createTestApp(db, RETENTION_ENV, { metrics });
    const endpoint = async (url: string, eventTypes: string[]) =>
      (await (await t.send('POST', '/v1/endpoints', { url, event_types: eventTypes })).json()).id as string;
    const a = await endpoint(ok.url, ['x', 'fan']);
    const b = await endpoint(refusing.url, ['x']);
    const c = await endpoint(flaky.url, ['x', 'fan']);
    const enqueue = async (body: Record<string, unknown>) => {
      const res = await t.send('POST', '/v1/deliveries', { event_type: 'x', payload: { n: 1 }, ...body });
      assert.equal(res.status, 202);
      return (await res.json()) as { message_id: string; deliveries: { id: string; endpoint_id: string }[] };
    };
    const dispatcher = await startTestDispatcher(db, RETENTION_ENV, { metrics });
    try {
      const oldStart = Date.now();
      const delivered = await enqueue({ endpoint_id: a });
      const dead = await enqueue({ endpoint_id: b });
      const queued = await enqueue({ endpoint_id: c });
      const fan = await enqueue({ event_type: 'fan' });
      assert.equal(fan.deliveries.length, 2);
      const fanToA = fan.deliveries.find((d) => d.endpoint_id === a)!.id;
      const fanToC = fan.deliveries.find((d) => d.endpoint_id === c)!.id;
      const status = async (id: string) =>
        (await db.sql<{ status: string }[]>`SELECT status FROM deliveries WHERE id = ${id}`)[0]?.status;
      const attempts = async (id: string) =>
        (
          await db.sql<
            { n: number }[]
          >`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ${id}`
        )[0]!.n;
      const messageExists = async (id: string) =>
        (await db.sql`SELECT 1 FROM messages WHERE id = ${id}`).length === 1;
      await waitFor('the old deliveries to settle or retry', async () => {
        return (
          (await status(delivered.deliveries[0]!.id)) === 'delivered' &&
          (await status(dead.deliveries[0]!.id)) === 'dead_letter' &&
          (await status(fanToA)) === 'delivered' &&
          (await attempts(queued.deliveries[0]!.id)) > 0 &&
          (await attempts(fanToC)) > 0
        );
      });
      assert.ok(Date.now() - oldStart < WINDOW_MS / 2, 'the old deliveries settled well inside the window');

      // Past the window, something recent arrives.
      await new Promise((r) => setTimeout(r, oldStart + WINDOW_MS + 500 - Date.now()));
      const recent = await enqueue({ endpoint_id: a });
      const recentId = recent.deliveries[0]!.id;
      await waitFor('the recent delivery', async () => (await status(recentId)) === 'delivered');

      const gone = [delivered.deliveries[0]!.id, dead.deliveries[0]!.id, fanToA];
      await waitFor(
        'old settled deliveries, their attempts and messages to be removed',
        async () => {
          for (const id of gone)
            if ((await status(id)) !== undefined || (await attempts(id)) > 0) return false;
          return !(await messageExists(delivered.message_id)) && !(await messageExists(dead.message_id));
        },
        30_000,
      );
      // Removal happens well before the recent delivery reaches the window (17 s).
      assert.equal(await status(recentId), 'delivered');
      assert.ok((await attempts(recentId)) > 0, 'recent attempts stay');
      assert.ok(await messageExists(recent.message_id));
      // Queued deliveries are never removed, however old; nor is the fan-out message while one
      // of its deliveries remains.
      assert.equal(await status(queued.deliveries[0]!.id), 'failed');
      assert.ok(await messageExists(queued.message_id));
      assert.equal(await status(fanToC), 'failed');
      assert.ok(
        await messageExists(fan.message_id),
        'the fan-out message stays while a delivery of it is queued',
      );

      // Once the flaky endpoint recovers, the last deliveries settle and the pass takes them and
      // the fan-out message.
      flakyState.status = 200;
      await waitFor(
        'the fan-out message to go with its last delivery',
        async () =>
          (await status(fanToC)) === undefined &&
          !(await messageExists(fan.message_id)) &&
          !(await messageExists(queued.message_id)),
        30_000,
      );

      // The pass counts what it removed once it has committed: poll the scrape briefly.
      const scraped = await waitFor('the counters of the last pass', async () => {
        const text = parsePrometheusText(await (await t.request('/metrics')).text());
        return text.value('hookpost_retention_rows_removed_total', { table: 'messages' })! >= 4 ? text : null;
      });
      assert.ok(scraped);
      assert.ok(scraped.value('hookpost_retention_rows_removed_total', { table: 'deliveries' })! >= 5);
      assert.ok(scraped.value('hookpost_retention_partitions_dropped_total', {})! >= 1);
      assert.ok(scraped.value('hookpost_retention_last_success_timestamp_seconds', {})! > oldStart / 1000);
      assert.ok(scraped.value('hookpost_database_size_bytes', {})! > 1_000_000);
      const [partitions] = await db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'delivery_attempts'::regclass`;
      assert.ok(partitions!.n <= 20, `old partitions are dropped, not accumulated (${partitions!.n})`);
    } finally {
      await dispatcher.stop();
    }
  });
});
