/**
 * The tenants migration on a database that already holds deliveries: migrate up to the file
 * before it (found by name, whatever other migrations exist), write data as the old schema
 * had it, then migrate the rest. Nothing is lost; everything lands in `default`, still readable,
 * still deduplicated, still reached by a fan-out.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { migrate, readMigrations, SQL_DIR } from '../../src/db/migrate.js';
import { requestHash } from '../../src/deliveries/idempotency.js';
import { createTestApp, createTestDatabase } from '../helpers.js';

describe('the tenants migration', () => {
  it('keeps every delivery of an existing database and puts it all in default', async () => {
    const files = await readMigrations();
    const tenants = files.find((f) => f.name.endsWith('_tenants.sql'));
    assert.ok(tenants, 'the tenants migration exists');
    const earlier = await mkdtemp(path.join(os.tmpdir(), 'hp-mig-tenants-'));
    for (const f of files.filter((f) => f.version < tenants.version)) {
      await copyFile(path.join(SQL_DIR, f.name), path.join(earlier, f.name));
    }
    const db = await createTestDatabase(false);
    try {
      await migrate(db.sql, earlier).finally(() => rm(earlier, { recursive: true, force: true }));
      // The old schema: endpoints without tenants, messages keyed by producer.
      const payload = Buffer.from('{"old":true}');
      const hash = requestHash({
        tenantId: null,
        endpointId: 'ep_old',
        eventType: 'order.created',
        eventId: 'evt_old',
        orderingKey: null,
        idempotencyKey: 'idem-old',
        payload,
      });
      await db.sql`INSERT INTO endpoints (id, url, event_types) VALUES ('ep_old', 'http://127.0.0.1:9/old', '{order.created}')`;
      await db.sql`INSERT INTO endpoint_secrets (endpoint_id, secret) VALUES ('ep_old', 'whsec_b2xk')`;
      await db.sql`INSERT INTO endpoint_health (endpoint_id) VALUES ('ep_old')`;
      await db.sql`
        INSERT INTO messages (id, producer, event_type, event_id, idempotency_key, endpoint_id, request_hash, payload)
        VALUES ('msg_old1', 'admin', 'order.created', 'evt_old', 'idem-old', 'ep_old', ${hash}, ${payload}),
               ('msg_old2', 'admin', 'order.created', NULL, NULL, NULL, ${hash}, ${payload})`;
      await db.sql`
        INSERT INTO deliveries (id, message_id, endpoint_id, status, attempt_count, dead_at)
        VALUES ('dlv_old1', 'msg_old1', 'ep_old', 'pending', 0, NULL),
               ('dlv_old2', 'msg_old2', 'ep_old', 'dead_letter', 8, now())`;
      await db.sql`INSERT INTO delivery_queue (delivery_id, endpoint_id, message_id) VALUES ('dlv_old1', 'ep_old', 'msg_old1')`;

      const applied = await migrate(db.sql);
      assert.ok(applied.includes(tenants.name));
      const [counts] = await db.sql`
        SELECT (SELECT count(*)::int FROM deliveries) AS deliveries, (SELECT count(*)::int FROM delivery_queue) AS queued,
               (SELECT count(*)::int FROM messages WHERE tenant_id = 'default') AS messages,
               (SELECT count(*)::int FROM endpoints WHERE tenant_id = 'default') AS endpoints`;
      assert.deepEqual(counts, { deliveries: 2, queued: 1, messages: 2, endpoints: 1 });

      const t = await createTestApp(db);
      const listed = await (await t.send('GET', '/v1/deliveries?tenant_id=default')).json();
      assert.deepEqual(listed.data.map((d: { id: string }) => d.id).sort(), ['dlv_old1', 'dlv_old2']);
      assert.equal((await (await t.send('GET', '/v1/endpoints/ep_old')).json()).tenant_id, 'default');
      // The same request as before the upgrade is still recognised as a duplicate.
      const retry = await t.send(
        'POST',
        '/v1/deliveries',
        { endpoint_id: 'ep_old', event_type: 'order.created', event_id: 'evt_old', payload: { old: true } },
        { 'idempotency-key': 'idem-old' },
      );
      assert.equal(retry.status, 200);
      assert.equal((await retry.json()).message_id, 'msg_old1');
      // And a fan-out in the default tenant reaches the old endpoint through the new index.
      const fanOut = await (
        await t.send('POST', '/v1/deliveries', { event_type: 'order.created', payload: {} })
      ).json();
      assert.deepEqual(
        fanOut.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id),
        ['ep_old'],
      );
    } finally {
      await db.drop();
    }
  });
});
