/**
 * A delivery's message and endpoint without foreign keys (sql/0010_delivery_references.sql):
 * the enqueue no longer checks them row by row, and the delete side still refuses to remove a
 * message or an endpoint that deliveries point at, with a foreign-key error and nothing removed.
 * Retention, which deletes a message in the same statement as its last delivery, still works
 * (test/retention/retention.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createEndpoint, createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

describe('delivery references', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
  });
  after(() => db.drop());

  async function enqueueOne(): Promise<{ messageId: string; endpointId: string; deliveryId: string }> {
    const ep = await createEndpoint(t, 'http://127.0.0.1:9/refs');
    const res = await t.send('POST', '/v1/deliveries', { endpoint_id: ep.id, event_type: 'x', payload: {} });
    assert.equal(res.status, 202);
    const body = await res.json();
    return { messageId: body.message_id, endpointId: ep.id, deliveryId: body.deliveries[0].id };
  }

  it('the enqueue runs no per-row reference check', async () => {
    const keys = await db.sql`
      SELECT conname FROM pg_constraint WHERE conrelid = 'deliveries'::regclass AND contype = 'f'`;
    assert.deepEqual([...keys], []);
  });

  it('refuses to delete a message that still has a delivery, and removes nothing', async () => {
    const { messageId } = await enqueueOne();
    await assert.rejects(db.sql`DELETE FROM messages WHERE id = ${messageId}`, (error: { code?: string }) => {
      assert.equal(error.code, '23503');
      return true;
    });
    const [row] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE id = ${messageId}`;
    assert.equal(row?.n, 1);
  });

  it('refuses to delete an endpoint that deliveries point at; one without deliveries goes', async () => {
    const { endpointId } = await enqueueOne();
    await assert.rejects(
      db.sql`DELETE FROM endpoints WHERE id = ${endpointId}`,
      (error: { code?: string }) => {
        assert.equal(error.code, '23503');
        return true;
      },
    );
    const unused = await createEndpoint(t, 'http://127.0.0.1:9/unused');
    await db.sql`DELETE FROM endpoint_secrets WHERE endpoint_id = ${unused.id}`;
    await db.sql`DELETE FROM endpoint_health WHERE endpoint_id = ${unused.id}`;
    const gone = await db.sql`DELETE FROM endpoints WHERE id = ${unused.id} RETURNING id`;
    assert.equal(gone.length, 1);
  });

  it('a message goes with its last delivery in one statement', async () => {
    const { messageId, deliveryId } = await enqueueOne();
    await db.sql`
      WITH q AS (DELETE FROM delivery_queue WHERE delivery_id = ${deliveryId}),
           d AS (DELETE FROM deliveries WHERE id = ${deliveryId})
      DELETE FROM messages WHERE id = ${messageId}`;
    const [row] = await db.sql`SELECT count(*)::int AS n FROM messages WHERE id = ${messageId}`;
    assert.equal(row?.n, 0);
  });
});
