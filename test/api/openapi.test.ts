/**
 * GET /openapi.json: every route the app serves is in the document (a route added without its
 * documentRoute() call fails here), nothing documented is missing from the app, and the document
 * passes a real OpenAPI 3.1 validator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

interface Param {
  name: string;
  in: string;
  required: boolean;
  schema: { enum?: string[] };
}
interface Operation {
  security: unknown[];
  responses: Record<string, unknown>;
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

describe('openapi document', () => {
  let db: TestDatabase;
  let t: Awaited<ReturnType<typeof createTestApp>>;
  // biome-ignore lint/suspicious/noExplicitAny: the document is checked by the assertions
  let doc: any;

  before(async () => {
    db = await createTestDatabase();
    t = await createTestApp(db);
    const res = await t.request('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = await res.json();
  });
  after(() => db.drop());

  /** The app's handlers as "get /v1/endpoints/{id}", from Hono's own route table. */
  function servedRoutes(): Set<string> {
    const served = new Set<string>();
    for (const r of t.app.routes) {
      if (!METHODS.has(r.method)) continue; // 'ALL' entries are middleware (auth, headers)
      served.add(`${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    }
    return served;
  }

  it('documents every route the app serves, and only those', () => {
    const served = servedRoutes();
    assert.ok(served.size > 20, `expected the whole API, found ${served.size} routes`);
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) documented.add(`${method} ${path}`);
    }
    const missing = [...served].filter((r) => !documented.has(r));
    assert.deepEqual(missing, [], 'routes without documentRoute() (add one next to the route)');
    const stale = [...documented].filter((r) => !served.has(r));
    assert.deepEqual(stale, [], 'documented routes the app does not serve');
  });

  it('passes an OpenAPI 3.1 validator, with every $ref resolvable', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
    // Throws on a $ref that points nowhere.
    assert.ok(validator.resolveRefs());
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of new Set(refs)) {
      const name = /#\/components\/schemas\/([^"]+)"/.exec(ref)?.[1];
      assert.ok(name && doc.components.schemas[name], `${ref} resolves`);
    }
  });

  it('declares the bearer scheme, and uses it on /v1 routes only', () => {
    assert.deepEqual(doc.components.securitySchemes.bearer, {
      type: 'http',
      scheme: 'bearer',
      description: 'an API key or the admin token',
    });
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const secured = op.security.length > 0;
        assert.equal(secured, path.startsWith('/v1/'), `${method} ${path} security`);
        if (secured) assert.ok(op.responses['401'], `${method} ${path} documents 401`);
      }
    }
  });

  it('describes requests with the schemas the routes validate with', () => {
    const create = doc.paths['/v1/endpoints'].post;
    const body = create.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['url']);
    assert.equal(body.additionalProperties, false, 'strictObject: unknown fields are refused');
    assert.equal(body.properties.url.maxLength, 2048);
    assert.equal(
      create.responses['400'].content['application/json'].schema.$ref,
      '#/components/schemas/Error',
    );
    assert.ok(create.responses['415'] && create.responses['413']);

    const enqueue = doc.paths['/v1/deliveries'].post;
    assert.deepEqual(enqueue.requestBody.content['application/json'].schema.required.sort(), [
      'event_type',
      'payload',
    ]);
    assert.ok(enqueue.parameters.some((p: Param) => p.in === 'header' && p.name === 'Idempotency-Key'));
    for (const refused of [enqueue, doc.paths['/v1/deliveries/batch'].post]) {
      for (const status of ['429', '503']) {
        assert.ok(refused.responses[status].headers['retry-after'], `${status} says when to come back`);
        assert.equal(
          refused.responses[status].content['application/json'].schema.$ref,
          '#/components/schemas/Error',
        );
      }
    }

    const replay = doc.paths['/v1/dead-letters/replay'].post.requestBody.content['application/json'].schema;
    assert.equal(replay.properties.status_code.minimum, 100);
    assert.equal(replay.properties.since.format, 'date-time');

    const list = doc.paths['/v1/deliveries'].get.parameters;
    const status = list.find((p: Param) => p.name === 'status');
    assert.deepEqual(status.schema.enum, [
      'pending',
      'in_flight',
      'delivered',
      'failed',
      'dead_letter',
      'cancelled',
    ]);
    const health = doc.paths['/v1/endpoints/{id}/health'].get;
    assert.deepEqual(
      health.parameters.map((p: Param) => [p.name, p.in, p.required]),
      [['id', 'path', true]],
    );
    assert.ok(health.responses['404']);
  });

  it('is served without a token', async () => {
    const res = await t.request('/openapi.json');
    assert.equal(res.status, 200);
  });
});
