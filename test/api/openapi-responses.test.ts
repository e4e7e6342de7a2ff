/**
 * The document's response shapes against real responses: each request below is answered by the
 * app and its body parsed with the schema documented for that route and status. A field renamed
 * or added in a handler without the document following fails here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { documentedRoutes } from '../../src/api/openapi/registry.js';
import {
  createTestApp,
  createTestDatabase,
  type Receiver,
  startReceiver,
  startTestDispatcher,
  type TestDatabase,
  type TestResponse,
  waitFor,
} from '../helpers.js';

describe('documented responses match real ones', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let dispatcher: Awaited<ReturnType<typeof startTestDispatcher>>;
  let receiver: Receiver;
  const checked = new Set<string>();

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    dispatcher = await startTestDispatcher(db, { HOOKPOST_POLL_INTERVAL_MS: '50' });
    // 400 to payloads marked "bad" (straight to dead letter), 200 to the rest.
    receiver = await startReceiver((_req, res, body) =>
      res.writeHead(body.includes('bad') ? 400 : 200).end('ok'),
    );
  });
  after(async () => {
    await dispatcher.stop();
    await receiver.close();
    await db.drop();
  });

  /** Sends, then checks the body against the documented schema for (method, template, status). */
  async function check(method: string, template: string, url: string, body?: unknown): Promise<TestResponse> {
    const res = await t.send(method, url, body);
    const route = documentedRoutes().find((r) => r.method === method.toLowerCase() && r.path === template);
    assert.ok(route, `${method} ${template} is documented`);
    const documented = route.responses[res.status];
    if (res.status >= 400) {
      assert.ok(
        route.errors?.includes(res.status) || [400, 401].includes(res.status),
        `${res.status} listed`,
      );
      return res;
    }
    assert.ok(documented, `${method} ${template} documents status ${res.status}`);
    checked.add(`${method} ${template} ${res.status}`);
    if (!documented.schema) return res;
    const json = await res.clone().json();
    const parsed = documented.schema.safeParse(json);
    assert.ok(parsed.success, `${method} ${template}: ${parsed.error?.message}`);
    assertNoUndocumentedFields(documented.schema, json, `${method} ${template}`);
    return res;
  }

  /** zod strips unknown keys silently; here an unknown key in an object fails. */
  function assertNoUndocumentedFields(schema: z.ZodType, value: unknown, where: string) {
    if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
      if (value === undefined || value === null) return;
      return assertNoUndocumentedFields(schema.unwrap() as z.ZodType, value, where);
    }
    if (schema instanceof z.ZodArray && Array.isArray(value)) {
      for (const item of value) assertNoUndocumentedFields(schema.element as z.ZodType, item, where);
    }
    if (schema instanceof z.ZodObject && value && typeof value === 'object') {
      const shape = schema.shape as Record<string, z.ZodType>;
      for (const [key, v] of Object.entries(value)) {
        assert.ok(key in shape, `${where}: field ${key} is not documented`);
        assertNoUndocumentedFields(shape[key]!, v, `${where}.${key}`);
      }
    }
  }

  it('endpoints, deliveries, dead letters, replays and the pipeline', async () => {
    const ep = await (await check('POST', '/v1/endpoints', '/v1/endpoints', { url: receiver.url })).json();
    await check('GET', '/v1/endpoints', '/v1/endpoints');
    await check('GET', '/v1/endpoints/{id}', `/v1/endpoints/${ep.id}`);
    await check('PATCH', '/v1/endpoints/{id}', `/v1/endpoints/${ep.id}`, { description: 'x' });
    await check('GET', '/v1/endpoints/{id}/health', `/v1/endpoints/${ep.id}/health`);
    await check('GET', '/v1/endpoints/slow', '/v1/endpoints/slow?p95_ms=0');
    await check('POST', '/v1/endpoints/{id}/rotate-secret', `/v1/endpoints/${ep.id}/rotate-secret`);
    await check('POST', '/v1/endpoints/{id}/test-event', `/v1/endpoints/${ep.id}/test-event`);
    await check('POST', '/v1/endpoints/{id}/close-circuit', `/v1/endpoints/${ep.id}/close-circuit`);

    const good = await (
      await check('POST', '/v1/deliveries', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'a',
        payload: {},
      })
    ).json();
    await check('POST', '/v1/deliveries', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'a',
      payload: {},
      event_id: 'e1',
    });
    await check('POST', '/v1/deliveries', '/v1/deliveries', {
      endpoint_id: ep.id,
      event_type: 'a',
      payload: {},
      event_id: 'e1',
    });
    const batch = await (
      await check('POST', '/v1/deliveries/batch', '/v1/deliveries/batch', {
        items: [{ endpoint_id: ep.id, event_type: 'a', payload: { kind: 'bad' } }],
      })
    ).json();
    const bad = batch.results[0].deliveries[0].id;
    const ids = [good.deliveries[0].id, bad];
    await waitFor('both settled', async () => {
      const rows = await db.sql`SELECT status FROM deliveries WHERE id = ANY(${ids}) ORDER BY id`;
      return rows.every((r) => r.status === 'delivered' || r.status === 'dead_letter');
    });
    await check('GET', '/v1/deliveries', '/v1/deliveries');
    await check('GET', '/v1/deliveries/{id}', `/v1/deliveries/${bad}`);
    await check('GET', '/v1/endpoints/{id}/latency', `/v1/endpoints/${ep.id}/latency`);
    await check('GET', '/v1/dead-letters/analysis', '/v1/dead-letters/analysis');
    const dry = await (
      await check('POST', '/v1/dead-letters/replay', '/v1/dead-letters/replay', {
        endpoint_id: ep.id,
        dry_run: true,
      })
    ).json();
    await check('GET', '/v1/dead-letters/replays/{id}', `/v1/dead-letters/replays/${dry.audit_id}`);
    await check('POST', '/v1/deliveries/{id}/replay', `/v1/deliveries/${bad}/replay`);
    await check('GET', '/v1/deliveries/{id}', `/v1/deliveries/${bad}`);
    await check('GET', '/v1/pipeline', '/v1/pipeline');
    await check('GET', '/v1/endpoints/{id}', '/v1/endpoints/ep_missing');
    await check('DELETE', '/v1/endpoints/{id}', `/v1/endpoints/${ep.id}`);
    assert.ok(checked.size >= 20, [...checked].join('\n'));
  });

  it('tenants, portal sessions, API keys, the audit log, event types and expunge', async () => {
    await check('PUT', '/v1/tenants/{id}', '/v1/tenants/acme', { name: 'Acme' });
    await check('PUT', '/v1/tenants/{id}', '/v1/tenants/acme', { metadata: { tier: 'gold' } });
    await check('GET', '/v1/tenants', '/v1/tenants');
    await check('GET', '/v1/tenants/{id}', '/v1/tenants/acme');
    const session = await (
      await check('POST', '/v1/tenants/{id}/portal-sessions', '/v1/tenants/acme/portal-sessions', {
        expires_in_seconds: 600,
      })
    ).json();
    assert.match(session.url, /\/portal#token=hpk_/);
    const key = await (
      await check('POST', '/v1/api-keys', '/v1/api-keys', { name: 'ci', scopes: ['deliveries:read'] })
    ).json();
    await check('GET', '/v1/api-keys', '/v1/api-keys?include_portal=true');
    await check('DELETE', '/v1/api-keys/{id}', `/v1/api-keys/${key.id}`);
    await check('PUT', '/v1/event-types/{name}', '/v1/event-types/order.created', {
      description: 'an order',
      schema: { type: 'object' },
      example: { id: 1 },
    });
    await check('PUT', '/v1/event-types/{name}', '/v1/event-types/order.created', { deprecated: true });
    await check('GET', '/v1/event-types', '/v1/event-types');
    await check('GET', '/v1/event-types/{name}', '/v1/event-types/order.created');
    await check('DELETE', '/v1/event-types/{name}', '/v1/event-types/order.created');
    const ep = await (
      await check('POST', '/v1/endpoints', '/v1/endpoints', { url: receiver.url, tenant_id: 'acme' })
    ).json();
    const sent = await (
      await check('POST', '/v1/deliveries', '/v1/deliveries', {
        endpoint_id: ep.id,
        event_type: 'a',
        payload: {},
      })
    ).json();
    await check('POST', '/v1/messages/{id}/expunge', `/v1/messages/${sent.message_id}/expunge`);
    await check('GET', '/v1/deliveries', '/v1/deliveries?tenant_id=acme&event_type=a');
    await check('GET', '/v1/audit-log', '/v1/audit-log');
    await check('DELETE', '/v1/tenants/{id}', '/v1/tenants/acme');
    for (const route of [
      'GET /v1/tenants 200',
      'PUT /v1/tenants/{id} 201',
      'PUT /v1/tenants/{id} 200',
      'POST /v1/tenants/{id}/portal-sessions 201',
      'DELETE /v1/tenants/{id} 200',
      'PUT /v1/event-types/{name} 200',
      'DELETE /v1/event-types/{name} 204',
      'POST /v1/messages/{id}/expunge 200',
      'GET /v1/audit-log 200',
    ]) {
      assert.ok(checked.has(route), route);
    }
  });

  it('errors have the documented error shape', async () => {
    const route = documentedRoutes().find((r) => r.path === '/v1/endpoints/{id}')!;
    assert.ok(route.errors?.includes(404));
    const res = await t.send('GET', '/v1/endpoints/ep_missing');
    const { errorSchema } = await import('../../src/api/openapi/registry.js');
    assert.ok(errorSchema.safeParse(await res.json()).success);
  });
});
