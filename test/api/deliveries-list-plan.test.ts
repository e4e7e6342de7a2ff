/**
 * GET /v1/deliveries under a tenant reads the tenant's own rows, not everybody's history: next to
 * a big tenant with 40 000 newer deliveries, a small tenant's list (unfiltered, or with a filter
 * that matches nothing: an event type it never sent, a status it has none of, a time range
 * without deliveries) reads about as many rows as the small tenant has. EXPLAIN (ANALYZE) of the
 * list's own statement counts the rows each scan returned.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureMessageIndexes, MESSAGE_EVENT_TYPE_INDEX } from '../../src/deliveries/message-indexes.js';
import { deliveryListQuery, type ListFilter } from '../../src/deliveries/read.js';
import type { TenantScope } from '../../src/tenants/scope.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';

const SMALL = 20;
const BIG = 40_000;
const small: TenantScope = { tenantId: 'tenant_small', operations: false };

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

function scans(node: PlanNode): PlanNode[] {
  const own = node['Relation Name'] ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scans)];
}

describe('the deliveries list reads only its tenant', () => {
  let db: TestDatabase;
  let smallIds: string[];

  before(async () => {
    db = await createTestDatabase();
    assert.equal(await ensureMessageIndexes(db.sql), true);
    // One message and one delivery per row: the small tenant's a day old, the big tenant's newer
    // (the worst case for a walk of the deliveries newest first).
    const seed = (tenant: string, count: number, startMs: number, eventType: string) => db.sql`
      WITH rows AS (
        SELECT g, lpad(to_hex(${startMs}::bigint + g), 12, '0') || lpad(to_hex(g), 20, '0') AS suffix,
          to_timestamp((${startMs}::bigint + g) / 1000.0) AS at
        FROM generate_series(1, ${count}::int) g
      ),
      m AS (
        INSERT INTO messages (id, tenant_id, producer, event_type, request_hash, payload, created_at)
        SELECT 'msg_' || suffix, ${tenant}, 'test', ${eventType}, '\\x00', '\\x7b7d', at FROM rows
      )
      INSERT INTO deliveries (id, message_id, endpoint_id, status, created_at)
      SELECT 'dlv_' || suffix, 'msg_' || suffix, ${`ep_${tenant}_`} || (g % 3), 'delivered', at FROM rows`;
    // Three endpoints each: a tenant's page is merged from its endpoints' newest deliveries.
    for (const tenant of ['tenant_small', 'tenant_big']) {
      await db.sql`INSERT INTO tenants (id) VALUES (${tenant})`;
      await db.sql`
        INSERT INTO endpoints (id, tenant_id, url)
        SELECT ${`ep_${tenant}_`} || g, ${tenant}, 'http://127.0.0.1:9/' || g FROM generate_series(0, 2) g`;
    }
    const now = Date.now();
    await seed('tenant_small', SMALL, now - 86_400_000, 'small.type');
    await seed('tenant_big', BIG, now - BIG, 'big.type');
    await db.sql`ANALYZE messages`;
    await db.sql`ANALYZE deliveries`;
    await db.sql`ANALYZE endpoints`;
    smallIds = (
      await db.sql<{ id: string }[]>`
        SELECT d.id FROM deliveries d JOIN messages m ON m.id = d.message_id
        WHERE m.tenant_id = 'tenant_small' ORDER BY d.id DESC`
    ).map((r) => r.id);
  });
  after(() => db.drop());

  async function explain(filter: Omit<ListFilter, 'limit'>) {
    const query = { limit: 50, ...filter };
    const [row] =
      await db.sql`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${deliveryListQuery(db.sql, small, query)}`;
    const plan = (row!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
    const read = scans(plan).filter(
      (n) => n['Relation Name'] === 'deliveries' || n['Relation Name'] === 'messages',
    );
    return {
      text: JSON.stringify(plan),
      // Rows each scan returned or read and dropped, over all its loops.
      rows: read.reduce(
        (sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'],
        0,
      ),
      buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
      indexes: read.map((n) => n['Index Name']),
      result: await deliveryListQuery(db.sql, small, query),
    };
  }

  const monthAgo = () => new Date(Date.now() - 30 * 86_400_000).toISOString();
  // [name, filter, rows it finds, most rows its scans may read: each row it finds is read from
  // the endpoint index or the messages, then deliveries and messages]. An event type or a time range
  // with nothing in it is an empty index range: nothing read, where it used to walk the tenant's
  // whole history. A status is not indexed (deliveries.status changes with every attempt, and an
  // index on it would end the attempts' HOT updates): it reads the tenant's own rows.
  const cases: [string, Omit<ListFilter, 'limit'>, number, number][] = [
    ['no filter', {}, SMALL, 4 * SMALL],
    ['an event type it never sent', { eventType: 'big.type' }, 0, 0],
    [
      'a time range without deliveries',
      { since: '2020-01-01T00:00:00Z', until: '2020-02-01T00:00:00Z' },
      0,
      0,
    ],
    ['a status it has none of', { status: 'dead_letter' }, 0, 4 * SMALL],
    ['after a cursor', { cursor: 'cursor' }, SMALL - 5, 4 * SMALL],
    ['since a month ago', { since: monthAgo() }, SMALL, 4 * SMALL],
    // Its rows, some more than once (a join probes one table per row of the other).
    ['its event type, after a cursor', { eventType: 'small.type', cursor: 'cursor' }, SMALL - 5, 10 * SMALL],
  ];
  for (const [name, filter, expected, most] of cases) {
    it(`${name}: reads at most ${most} rows, never the other tenant's ${BIG}`, async () => {
      const f = filter.cursor ? { ...filter, cursor: smallIds[4] } : filter;
      const { text, rows, buffers, result } = await explain(f);
      assert.equal(result.length, expected, text);
      // (Tiny tables such as endpoints may be read whole; the two big ones never.)
      assert.ok(
        !/"Seq Scan"[^}]*"Relation Name":"(deliveries|messages)"/.test(text),
        `no sequential scan: ${text}`,
      );
      assert.ok(rows <= most, `read ${rows} rows (${buffers} buffers): ${text}`);
    });
  }

  it('an event type filter walks the (tenant_id, event_type, id) index', async () => {
    const { indexes } = await explain({ eventType: 'no.such.type' });
    assert.ok(indexes.includes(MESSAGE_EVENT_TYPE_INDEX), `${indexes}`);
  });

  it('lists newest first, and a cursor continues after the last id shown', async () => {
    const first = await deliveryListQuery(db.sql, small, { limit: 7 });
    assert.deepEqual(
      first.map((r) => r.id),
      smallIds.slice(0, 7),
    );
    const next = await deliveryListQuery(db.sql, small, { limit: 50, cursor: first.at(-1)!.id });
    assert.deepEqual(
      next.map((r) => r.id),
      smallIds.slice(7),
    );
  });
});
