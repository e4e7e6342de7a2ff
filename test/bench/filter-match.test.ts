import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matches } from '../../src/bench/filter-match.js';
import { parseFilter } from '../../src/filters/syntax.js';
import { FILTER_CASES } from '../filters/cases.js';

describe('the in-process filter evaluator (the alternative bench --filter-cost measures)', () => {
  for (const t of FILTER_CASES) {
    if (t.sqlOnly) continue;
    it(`${t.name}: ${JSON.stringify(t.filter)} → ${t.matches}`, () => {
      assert.equal(matches(parseFilter(t.filter).condition, t.payload), t.matches);
    });
  }

  it('evaluation does not change the payload or the filter', () => {
    const payload = { a: [{ b: 1 }, { b: 2 }], c: null };
    const before = JSON.stringify(payload);
    const filter = parseFilter({ a: { b: { $in: [2] } }, c: { $exist: true } });
    assert.equal(matches(filter.condition, payload), true);
    assert.equal(JSON.stringify(payload), before);
  });

  it('a list of 2,000 values is matched against 50,000 array elements through a set', () => {
    const values = Array.from({ length: 2000 }, (_, i) => `v${i}`);
    const filter = parseFilter({ tags: { $in: values } });
    const payload = { tags: Array.from({ length: 50_000 }, (_, i) => `w${i}`) };
    assert.equal(matches(filter.condition, payload), false);
    payload.tags.push('v1999');
    assert.equal(matches(filter.condition, payload), true);
  });

  it('a payload nested far deeper than the filter is only visited as deep as the filter goes', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    assert.equal(matches(parseFilter({ a: { a: { a: { $exist: true } } } }).condition, deep), true);
    assert.equal(matches(parseFilter({ b: { $exist: false } }).condition, deep), true);
  });
});
