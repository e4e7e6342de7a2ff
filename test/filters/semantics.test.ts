import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toJsonPath } from '../../src/filters/jsonpath.js';
import { parseFilter } from '../../src/filters/syntax.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';
import { FILTER_CASES } from './cases.js';

/**
 * The contract's filter semantics (cases.ts) as the fan-out decides them: each filter parsed,
 * compiled to SQL/JSON path, and matched by PostgreSQL's jsonb_path_match against the payload.
 */
describe('filters as SQL/JSON path predicates', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase(false);
  });
  after(async () => db.drop());

  it('every operator of the contract is exercised by the table, matching and not', () => {
    for (const op of [
      '$eq',
      '$neq',
      '$gt',
      '$gte',
      '$lt',
      '$lte',
      '$in',
      '$nin',
      '$exist',
      '$or',
      '$and',
      '$not',
    ]) {
      const uses = FILTER_CASES.filter((t) => JSON.stringify(t.filter).includes(`"${op}"`));
      assert.ok(
        uses.some((t) => t.matches),
        `${op} has a matching case`,
      );
      assert.ok(
        uses.some((t) => !t.matches),
        `${op} has a non-matching case`,
      );
    }
  });

  it('jsonb_path_match of the compiled filter decides the whole table as the contract says', async () => {
    const paths = FILTER_CASES.map((t) => toJsonPath(parseFilter(t.filter).condition));
    const rows = await db.sql<{ ord: number; matched: boolean | null }[]>`
      SELECT t.ord::int, t.path IS NULL OR jsonb_path_match(t.payload::jsonb, t.path::jsonpath, silent => true) AS matched
      FROM unnest(${FILTER_CASES.map((t) => t.payloadText ?? JSON.stringify(t.payload))}::text[], ${paths}::text[])
        WITH ORDINALITY AS t(payload, path, ord)
      ORDER BY t.ord`;
    const wrong = rows
      .filter((r) => r.matched !== FILTER_CASES[r.ord - 1]!.matches)
      .map((r) => `${FILTER_CASES[r.ord - 1]!.name}: ${paths[r.ord - 1]} → ${r.matched}`);
    assert.deepEqual(wrong, []);
  });
});
