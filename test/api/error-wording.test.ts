/**
 * Error messages are written for the person who reads them: the field by name and what it must
 * be, never zod's internals ("Invalid input: expected string, received undefined"); counts agree
 * with their noun ("1 item", not "1 items").
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { validate } from '../../src/api/body.js';
import { HttpError } from '../../src/api/errors.js';
import { plural } from '../../src/util/plural.js';
import { createTestApp, createTestDatabase, type TestDatabase } from '../helpers.js';

/** The 400's message and its per-field details for `value` against `schema`. */
function refusal(schema: z.ZodType, value: unknown): { message: string; details: unknown } {
  try {
    validate(schema, value);
  } catch (error) {
    assert.ok(error instanceof HttpError);
    return { message: error.message, details: error.details };
  }
  assert.fail('accepted');
}

const ZOD_WORDS =
  /Invalid input|expected \w+, received|Too (small|big)|Unrecognized key|Invalid option|>=|<=/;

describe('error wording', () => {
  const schema = z.strictObject({
    event_type: z.string().min(1).max(8),
    count: z.number().int().positive().max(10).optional(),
    tags: z.array(z.string()).min(1).max(2).optional(),
    scheme: z.enum(['v1', 'v1a']).optional(),
    id: z.string().regex(/^ep_/).optional(),
    own: z.string().regex(/^x/, 'must start with x').optional(),
  });

  it('names the field and says what it must be, in words', () => {
    const cases: [unknown, string][] = [
      [{}, 'event_type: is required'],
      [{ event_type: 5 }, 'event_type: must be a string, not a whole number'],
      [{ event_type: null }, 'event_type: must be a string, not null'],
      [{ event_type: '' }, 'event_type: must not be empty'],
      [{ event_type: 'a'.repeat(9) }, 'event_type: must be at most 8 characters long'],
      [{ event_type: 'a', count: 1.5 }, 'count: must be a whole number, not a number'],
      [{ event_type: 'a', count: 0 }, 'count: must be greater than 0'],
      [{ event_type: 'a', count: 11 }, 'count: must be at most 10'],
      [{ event_type: 'a', tags: [] }, 'tags: must have at least one item'],
      [{ event_type: 'a', tags: ['a', 'b', 'c'] }, 'tags: must have at most 2 items'],
      [{ event_type: 'a', tags: [1] }, 'tags.0: must be a string, not a whole number'],
      [{ event_type: 'a', scheme: 'v2' }, 'scheme: must be one of "v1", "v1a"'],
      [{ event_type: 'a', id: 'x' }, 'id: has an invalid format'],
      [{ event_type: 'a', own: 'y' }, 'own: must start with x'],
      [{ event_type: 'a', evnt_type: 'a' }, 'evnt_type: is not a known field'],
      [[1], 'request body: must be an object, not an array'],
      ['text', 'request body: must be an object, not a string'],
    ];
    for (const [value, expected] of cases) {
      const { message } = refusal(schema, value);
      assert.equal(message, expected, JSON.stringify(value));
      assert.doesNotMatch(message, ZOD_WORDS);
    }
  });

  it('lists every problem in details, each under its field', () => {
    const { details } = refusal(schema, { count: 'x', extra: 1, more: 2 });
    assert.deepEqual(details, [
      { field: 'event_type', message: 'is required' },
      { field: 'count', message: 'must be a number, not a string' },
      { field: 'extra', message: 'is not a known field' },
      { field: 'more', message: 'is not a known field' },
    ]);
  });

  it('agrees in number', () => {
    assert.equal(plural(1, 'point'), '1 point');
    assert.equal(plural(0, 'point'), '0 points');
    assert.equal(plural(2, 'delivery', 'deliveries'), '2 deliveries');
  });

  describe('through the API', () => {
    let db: TestDatabase;
    let t: Awaited<ReturnType<typeof createTestApp>>;
    before(async () => {
      db = await createTestDatabase();
      t = await createTestApp(db);
    });
    after(async () => {
      await db.drop();
    });

    it('an enqueue without event_type says it is required', async () => {
      const res = await t.send('POST', '/v1/deliveries', { payload: { a: 1 } });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.equal(body.error.code, 'validation_failed');
      assert.equal(body.error.message, 'event_type: is required');
      assert.deepEqual(body.error.details, [{ field: 'event_type', message: 'is required' }]);
    });

    it('a batch names the item and the field', async () => {
      const res = await t.send('POST', '/v1/deliveries/batch', {
        items: [
          { event_type: 'a', payload: {} },
          { event_type: 7, payload: {} },
        ],
      });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.match(body.error.message, /event_type: must be a string, not a whole number/);
      assert.doesNotMatch(body.error.message, ZOD_WORDS);
    });

    it('an endpoint create with a misspelt field names it', async () => {
      const res = await t.send('POST', '/v1/endpoints', { url: 'https://example.com/', event_type: ['a'] });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error.message, 'event_type: is not a known field');
    });
  });
});
