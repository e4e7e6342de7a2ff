/**
 * The events log (GET /v1/messages) as a partner's reconciliation job uses it: a tenant-bound key
 * pages through its own tenant's messages, oldest first, with the payload bytes exactly as they
 * were accepted; another tenant's messages never appear, not even through a cursor taken from
 * that tenant; and a page reads an index range, not the table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { messagePageSchema } from '../../src/api/openapi/messages-responses.js';
import { ensureMessageIndexes, MESSAGE_LOG_INDEX } from '../../src/deliveries/message-indexes.js';
import { messageLogQuery } from '../../src/deliveries/message-log.js';
import { arrayElementSpans, objectMemberSpans } from '../../src/util/raw-json.js';
import {
  createEndpoint,
  createTestApp,
  createTestDatabase,
  keySender,
  type TestDatabase,
} from '../helpers.js';

type Send = Awaited<ReturnType<typeof keySender>>['send'];

/** A page's messages with each payload as the exact text in the response (not re-serialised). */
async function readPage(res: Response) {
  assert.equal(res.status, 200, await res.clone().text());
  const text = await res.text();
  // The shape the OpenAPI document gives for this route.
  const documented = messagePageSchema.safeParse(JSON.parse(text));
  assert.ok(documented.success, documented.error?.message);
  const body = JSON.parse(text) as {
    data: { id: string; tenant_id: string; event_type: string; payload_expired: boolean }[];
    next_cursor: string | null;
  };
  const dataSpan = objectMemberSpans(text).get('data')!;
  const raw = arrayElementSpans(text, dataSpan.start).map((span) => {
    const payload = objectMemberSpans(text, span.start).get('payload')!;
    return text.slice(payload.start, payload.end);
  });
  return { ...body, raw };
}

/** Every page from the first, following next_cursor; returns the messages in order. */
async function pageAll(send: Send, query: string, startCursor: string | null = null) {
  const seen: { id: string; raw: string; tenant_id: string }[] = [];
  let cursor: string | null = startCursor;
  let pages = 0;
  do {
    const page = await readPage(
      await send('GET', `/v1/messages?${query}${cursor ? `&cursor=${cursor}` : ''}`),
    );
    for (const [i, m] of page.data.entries())
      seen.push({ id: m.id, tenant_id: m.tenant_id, raw: page.raw[i]! });
    cursor = page.next_cursor;
    pages++;
    assert.ok(pages < 100, 'the pages end');
  } while (cursor);
  return { seen, pages };
}

describe('events log', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let keyA: Awaited<ReturnType<typeof keySender>>;
  let keyB: Awaited<ReturnType<typeof keySender>>;
  /** What each tenant enqueued, in order: message id and the payload text as sent. */
  const sent: Record<'tenant_a' | 'tenant_b', { id: string; raw: string; type: string }[]> = {
    tenant_a: [],
    tenant_b: [],
  };
  let endpointA: string;
  let endpointB: string;

  async function enqueue(tenant: 'tenant_a' | 'tenant_b', raw: string, type = 'order.created') {
    const endpoint = tenant === 'tenant_a' ? endpointA : endpointB;
    const res = await t.send(
      'POST',
      '/v1/deliveries',
      `{"endpoint_id":"${endpoint}","event_type":"${type}","payload":${raw}}`,
    );
    assert.equal(res.status, 202, await res.clone().text());
    const id = (await res.json()).message_id as string;
    sent[tenant].push({ id, raw, type });
    return id;
  }

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    // Nothing listens there: no dispatcher runs in this file, the log does not need one.
    endpointA = (await createEndpoint(t, 'http://127.0.0.1:9/a', { tenant_id: 'tenant_a' })).id;
    endpointB = (await createEndpoint(t, 'http://127.0.0.1:9/b', { tenant_id: 'tenant_b' })).id;
    // Payloads whose bytes a parse-and-stringify would change: spacing, number forms, escapes, key order.
    const odd = [
      '{"b": 1.0, "a": 1e3}',
      '{ "price" : 12.50 ,"big": 12345678901234567890 }',
      '"caf\\u00e9 \\ud83d\\ude00"',
      '[1,\n 2 ,3]',
      '{"z":{"y":[{"x":null}]},"a":true}',
    ];
    // Interleaved, so a cursor from one tenant falls between the other's messages.
    for (const [i, raw] of odd.entries()) {
      await enqueue('tenant_a', raw, i % 2 === 0 ? 'order.created' : 'invoice.paid');
      await enqueue('tenant_b', `{"tenant": "b", "n": ${i}}`);
    }
    keyA = await keySender(t, { scopes: ['deliveries:read'], tenant_id: 'tenant_a' });
    keyB = await keySender(t, { scopes: ['deliveries:read'], tenant_id: 'tenant_b' });
  });
  after(async () => {
    await db.drop();
  });

  it('a tenant-bound key pages through its own messages, oldest first, payload bytes as accepted', async () => {
    const { seen, pages } = await pageAll(keyA.send, 'limit=2');
    assert.equal(pages, 3);
    assert.deepEqual(
      seen.map((m) => m.id),
      sent.tenant_a.map((m) => m.id),
    );
    assert.deepEqual(
      seen.map((m) => m.raw),
      sent.tenant_a.map((m) => m.raw.trim()),
    );
    assert.ok(seen.every((m) => m.tenant_id === 'tenant_a'));
    // The stored bytes, which the signature covers, are the ones shown.
    const stored =
      await db.sql`SELECT id, convert_from(payload, 'UTF8') AS text FROM messages WHERE tenant_id = 'tenant_a' ORDER BY id`;
    assert.deepEqual(
      seen.map((m) => m.raw),
      stored.map((r) => (r.text as string).trim()),
    );
  });

  it("another tenant's messages never appear, by filter or by cursor", async () => {
    const bIds = new Set(sent.tenant_b.map((m) => m.id));
    // Naming the other tenant gives an empty page, as for an unknown one.
    const named = await readPage(await keyA.send('GET', '/v1/messages?tenant_id=tenant_b'));
    assert.deepEqual(named.data, []);
    assert.equal(named.next_cursor, null);
    // B's own cursor (the id of its second message) given to A: A's messages after that moment, nothing of B's.
    const cursorOfB = (await readPage(await keyB.send('GET', '/v1/messages?limit=2'))).next_cursor!;
    assert.equal(cursorOfB, sent.tenant_b[1]!.id);
    const withB = await pageAll(keyA.send, 'limit=2', cursorOfB);
    assert.deepEqual(
      withB.seen.map((m) => m.id),
      sent.tenant_a.slice(2).map((m) => m.id),
    );
    assert.ok(withB.seen.every((m) => !bIds.has(m.id)));
    // And B's whole log holds only B's.
    const all = await pageAll(keyB.send, 'limit=500');
    assert.deepEqual(
      all.seen.map((m) => m.id),
      sent.tenant_b.map((m) => m.id),
    );
  });

  it('filters by event type and time, pages newest first on request, and rejects bad input with a 400', async () => {
    const invoices = await pageAll(keyA.send, 'event_type=invoice.paid');
    assert.deepEqual(
      invoices.seen.map((m) => m.id),
      sent.tenant_a.filter((m) => m.type === 'invoice.paid').map((m) => m.id),
    );
    const desc = await pageAll(keyA.send, 'order=desc&limit=3');
    assert.deepEqual(
      desc.seen.map((m) => m.id),
      sent.tenant_a.map((m) => m.id).reverse(),
    );
    // since/until: the acceptance time in the id, since inclusive, until exclusive.
    const msOf = (id: string) => Number.parseInt(id.slice(4, 16), 16);
    const third = sent.tenant_a[2]!.id;
    const since = new Date(msOf(third)).toISOString();
    const ranged = await pageAll(keyA.send, `since=${since}`);
    assert.ok(ranged.seen.length >= 3 && ranged.seen.every((m) => msOf(m.id) >= msOf(third)));
    assert.ok(ranged.seen.some((m) => m.id === third));
    const until = await pageAll(keyA.send, `until=${since}`);
    assert.ok(until.seen.every((m) => msOf(m.id) < msOf(third)) && !until.seen.some((m) => m.id === third));
    for (const bad of [
      'since=yesterday',
      'limit=0',
      'cursor=dlv_0123',
      'order=sideways',
      'until=2026-02-30T00:00:00Z',
    ]) {
      const res = await keyA.send('GET', `/v1/messages?${bad}`);
      assert.equal(res.status, 400, bad);
      assert.match((await res.json()).error.code, /^[a-z_]+$/);
    }
  });

  it('an expunged message stays in the log with payload_expired and no payload', async () => {
    const id = await enqueue('tenant_a', '{"secret": "erase me"}');
    assert.equal((await t.send('POST', `/v1/messages/${id}/expunge`)).status, 200);
    const page = await readPage(await keyA.send('GET', `/v1/messages?order=desc&limit=1`));
    assert.equal(page.data[0]!.id, id);
    assert.equal(page.data[0]!.payload_expired, true);
    assert.equal(page.raw[0], 'null');
  });

  it('a page stops at 4 MiB of payloads and the next one carries on', async () => {
    const big = (n: number) => `{"n": ${n}, "blob": "${'x'.repeat(250_000)}"}`;
    const tenant = 'tenant_big';
    const endpoint = (await createEndpoint(t, 'http://127.0.0.1:9/big', { tenant_id: tenant })).id;
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) {
      const res = await t.send(
        'POST',
        '/v1/deliveries',
        `{"endpoint_id":"${endpoint}","event_type":"x","payload":${big(n)}}`,
      );
      ids.push((await res.json()).message_id);
    }
    const first = await readPage(await t.send('GET', `/v1/messages?tenant_id=${tenant}&limit=500`));
    // 4 MiB / ~250 KB: 17 payloads, the 17th being the one that crosses the budget.
    assert.equal(first.data.length, 17);
    assert.equal(first.next_cursor, ids[16]);
    const all = await pageAll(t.send, `tenant_id=${tenant}&limit=500`);
    assert.deepEqual(
      all.seen.map((m) => m.id),
      ids,
    );
    assert.deepEqual(
      all.seen.map((m) => m.raw),
      ids.map((_, n) => big(n)),
    );
  });

  it('a page reads its own rows of the (tenant_id, id) index, not the table', async () => {
    assert.equal(await ensureMessageIndexes(db.sql), true);
    assert.equal(await ensureMessageIndexes(db.sql), true, 'a second call finds it valid');
    // A big neighbour: 50 000 messages of another tenant, older and newer than tenant_a's.
    await db.sql`
      INSERT INTO messages (id, tenant_id, producer, event_type, request_hash, payload)
      SELECT 'msg_' || lpad(to_hex(extract(epoch FROM now())::bigint * 1000 + g - 25000), 12, '0') || lpad(to_hex(g), 20, '0'),
        'tenant_huge', 'test', 'x', '\\x00', convert_to('{"g":' || g || '}', 'UTF8')
      FROM generate_series(1, 50000) g`;
    await db.sql`ANALYZE messages`;
    const explain = async (filter: Parameters<typeof messageLogQuery>[2]) => {
      const [row] =
        await db.sql`EXPLAIN (ANALYZE, FORMAT JSON) ${messageLogQuery(db.sql, { tenantId: 'tenant_a', operations: false }, filter)}`;
      return JSON.stringify(row!['QUERY PLAN']);
    };
    for (const filter of [
      { order: 'asc' as const, limit: 3 },
      { order: 'asc' as const, limit: 3, cursor: sent.tenant_a[1]!.id },
      { order: 'desc' as const, limit: 3, since: new Date(Date.now() - 3_600_000).toISOString() },
    ]) {
      const plan = await explain(filter);
      assert.ok(!plan.includes('"Seq Scan"'), `no sequential scan: ${plan}`);
      const scans = [...plan.matchAll(/"Index Name":"([a-z_]+)"[^}]*?"Actual Rows":(\d+)/g)];
      const logScan = scans.find((m) => m[1] === MESSAGE_LOG_INDEX);
      assert.ok(logScan, `walks ${MESSAGE_LOG_INDEX}: ${plan}`);
      assert.ok(Number(logScan[2]) <= 5, `read ${logScan[2]} index entries for a page of 3`);
    }
  });
});
