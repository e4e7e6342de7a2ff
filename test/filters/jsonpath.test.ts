/**
 * The compiled form: every filter the syntax accepts compiles to a path PostgreSQL parses, the
 * merges keep it one scan per place, and a hostile filter is refused or evaluated in bounded work.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileFilter, MAX_COMPILED_BYTES } from '../../src/filters/jsonpath.js';
import { FilterError, MAX_FILTER_BYTES } from '../../src/filters/syntax.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';

describe('filters compiled to SQL/JSON path', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase(false);
  });
  after(() => db.drop());

  const match = async (filter: unknown, payload: string) => {
    const { path } = compileFilter(filter);
    const [row] = await db.sql<{ m: boolean }[]>`
      SELECT coalesce(jsonb_path_match(${payload}::text::jsonb, ${path}::jsonpath, silent => true), false) AS m`;
    return row!.m;
  };

  it('writes numbers PostgreSQL reads back as the same value', async () => {
    for (const n of [
      0, -0, 1e21, -1e21, 5e-324, 1.7976931348623157e308, 0.1, -2.5e-7, 123456789012345680000,
    ]) {
      assert.equal(await match({ n }, `{"n": ${JSON.stringify(n)}}`), true, String(n));
      assert.equal(await match({ n: { $gte: n, $lte: n } }, `{"n": ${JSON.stringify(n)}}`), true, String(n));
    }
  });

  it('merges comparisons on one place into one scan', () => {
    assert.equal(
      compileFilter({ a: { $or: [1, { $gt: 5 }, { $in: ['x', 'y'] }] } }).path,
      'lax exists($."a" ? ((@ == 1) || (@ > 5) || (@ == "x" || @ == "y")))',
    );
    assert.equal(
      compileFilter({ a: { $neq: 1, $nin: [2, 3] } }).path,
      'lax !exists($."a" ? ((@ == 1 || (@ == 1) is unknown) || (@ == 2 || @ == 3 || ((@ == 2) is unknown))))',
    );
    assert.equal(compileFilter({}).path, null);
  });

  it('refuses a filter whose compiled form would be over the bound, and says why', () => {
    // One long key, then an $or of small branches: each branch repeats the key's path.
    const key = 'k'.repeat(4000);
    const filter = { [key]: { $or: Array.from({ length: 800 }, (_, i) => ({ [`b${i}`]: i })) } };
    assert.ok(Buffer.byteLength(JSON.stringify(filter)) <= MAX_FILTER_BYTES);
    assert.throws(
      () => compileFilter(filter),
      (e: unknown) =>
        e instanceof FilterError && e.pointer === '' && e.message.includes(`at most ${MAX_COMPILED_BYTES}`),
    );
  });

  it('evaluates a 16 KiB filter on a 256 KiB payload, every branch over every element, and answers', async () => {
    const clauses: unknown[] = [];
    while (
      Buffer.byteLength(JSON.stringify({ $or: [...clauses, { items: { sku: 'sku-0000' } }] })) <=
      MAX_FILTER_BYTES
    )
      clauses.push({ items: { sku: `sku-${String(clauses.length).padStart(4, '0')}` } });
    const items = Array.from({ length: 9000 }, (_, i) => `{"sku":"x${i}"}`);
    const payload = `{"items":[${items.join(',')}]}`;
    assert.ok(payload.length > 100_000);
    assert.equal(await match({ $or: clauses }, payload), false);
    assert.equal(await match({ $or: clauses }, payload.replace('"x8999"', '"sku-0003"')), true);
  });

  it('a $in of 1,000 values against an array of 10,000', async () => {
    const values = Array.from({ length: 1000 }, (_, i) => i * 2);
    const payload = JSON.stringify({ a: Array.from({ length: 10_000 }, (_, i) => i * 2 + 1) });
    assert.equal(await match({ a: { $in: values } }, payload), false);
    assert.equal(await match({ a: { $nin: values } }, payload), true);
  });
});
