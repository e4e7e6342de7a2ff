import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FilterError, MAX_FILTER_BYTES, MAX_FILTER_DEPTH, parseFilter } from '../../src/filters/syntax.js';

/** The FilterError a filter is refused with. */
function refusal(filter: unknown): FilterError {
  try {
    parseFilter(filter);
  } catch (error) {
    assert.ok(error instanceof FilterError, `a FilterError, not ${String(error)}`);
    return error;
  }
  assert.fail(`accepted ${JSON.stringify(filter)?.slice(0, 200)}`);
}

/** A filter nested `levels` deep: {"a": {"a": … 1}}. */
function nested(levels: number): Record<string, unknown> {
  let f: unknown = 1;
  for (let i = 0; i < levels; i++) f = { a: f };
  return f as Record<string, unknown>;
}

describe('filter syntax', () => {
  it('accepts every operator with its operand type', () => {
    parseFilter({
      a: { $eq: 'x' },
      b: { $neq: null },
      c: { $gt: 1, $gte: 'a', $lt: 2.5, $lte: -1 },
      d: { $in: ['x', 1, true, null] },
      e: { $nin: [1] },
      f: { $exist: false },
      $or: [{ g: 1 }, { h: { $not: { $and: [{ i: 1 }, { j: [1, 2] }] } } }],
    });
  });

  it('names an unknown operator and where it is', () => {
    const e = refusal({ data: { amount: { $between: [1, 2] } } });
    assert.equal(e.operator, '$between');
    assert.equal(e.pointer, '/data/amount/$between');
    assert.match(e.message, /unknown operator \$between/);
  });

  it('a typo of a known operator is unknown ($exists, $ne)', () => {
    assert.equal(refusal({ a: { $exists: true } }).operator, '$exists');
    assert.equal(refusal({ $or: [{ a: { $ne: 1 } }] }).pointer, '/$or/0/a/$ne');
  });

  const wrongOperands: [Record<string, unknown>, string, string][] = [
    [{ a: { $gt: true } }, '$gt', '/a/$gt'],
    [{ a: { $gte: null } }, '$gte', '/a/$gte'],
    [{ a: { $lt: [1] } }, '$lt', '/a/$lt'],
    [{ a: { $lte: { x: 1 } } }, '$lte', '/a/$lte'],
    [{ a: { $eq: [1] } }, '$eq', '/a/$eq'],
    [{ a: { $neq: { b: 1 } } }, '$neq', '/a/$neq'],
    [{ a: { $in: 'x' } }, '$in', '/a/$in'],
    [{ a: { $in: [] } }, '$in', '/a/$in'],
    [{ a: { $in: [1, [2]] } }, '$in', '/a/$in/1'],
    [{ a: { $nin: [{}] } }, '$nin', '/a/$nin/0'],
    [{ a: { $exist: 'yes' } }, '$exist', '/a/$exist'],
    [{ a: { $exist: 1 } }, '$exist', '/a/$exist'],
    [{ $or: { a: 1 } }, '$or', '/$or'],
    [{ $or: [] }, '$or', '/$or'],
    [{ $and: 'x' }, '$and', '/$and'],
    [{ $not: [] }, '$not', '/$not'],
    [{ $or: [{ a: {} }] }, '$or', '/$or/0/a'],
  ];
  for (const [filter, operator, pointer] of wrongOperands) {
    it(`wrong operand: ${JSON.stringify(filter)} names ${operator} at ${pointer}`, () => {
      const e = refusal(filter);
      assert.equal(e.operator, operator);
      assert.equal(e.pointer, pointer);
    });
  }

  it('escapes / and ~ in the pointer (RFC 6901)', () => {
    assert.equal(refusal({ 'a/b': { 'c~d': { $bad: 1 } } }).pointer, '/a~1b/c~0d/$bad');
  });

  it('refuses a filter that is not an object', () => {
    for (const f of [null, 'x', 1, true, [{ a: 1 }]]) assert.equal(refusal(f).pointer, '');
  });

  it('refuses an empty object or list below the top (they would match everything)', () => {
    assert.equal(refusal({ a: {} }).pointer, '/a');
    assert.equal(refusal({ a: [] }).pointer, '/a');
  });

  it(`accepts ${MAX_FILTER_DEPTH} levels and refuses ${MAX_FILTER_DEPTH + 1}`, () => {
    parseFilter(nested(MAX_FILTER_DEPTH));
    const e = refusal(nested(MAX_FILTER_DEPTH + 1));
    assert.equal(e.operator, null);
    assert.equal(e.pointer, `/a`.repeat(MAX_FILTER_DEPTH));
    assert.match(e.message, /deeper than 32 levels/);
  });

  it('refuses a filter nested 100,000 levels deep without overflowing the stack', () => {
    const e = refusal(nested(100_000));
    assert.match(e.message, /deeper than 32/);
    let arrays: unknown = 1;
    for (let i = 0; i < 100_000; i++) arrays = [arrays];
    assert.match(refusal({ $or: arrays }).message, /deeper than 32/);
  });

  it(`accepts ${MAX_FILTER_BYTES} bytes and refuses one more`, () => {
    const padding = (n: number) => ({ k: 'x'.repeat(n - JSON.stringify({ k: '' }).length) });
    parseFilter(padding(MAX_FILTER_BYTES));
    const e = refusal(padding(MAX_FILTER_BYTES + 1));
    assert.equal(e.pointer, '');
    assert.match(e.message, /16385 bytes; at most 16384/);
  });

  it('counts size in UTF-8 bytes', () => {
    const e = refusal({ k: 'é'.repeat(MAX_FILTER_BYTES / 2) });
    assert.match(e.message, /bytes; at most 16384/);
  });

  it('refuses lone surrogates (not storable as jsonb) in values and keys', () => {
    assert.equal(refusal({ a: '\ud800' }).pointer, '/a');
    assert.equal(refusal({ a: { $in: ['ok', '\udc00'] } }).pointer, '/a/$in/1');
    assert.equal(refusal({ '\ud800': 1 }).pointer, '/\ud800');
  });

  it('refuses numbers out of range (JSON.parse reads 1e400 as Infinity)', () => {
    const e = refusal(JSON.parse('{"a": {"$gt": 1e400}}'));
    assert.equal(e.operator, '$gt');
    assert.equal(refusal(JSON.parse('{"a": -1e400}')).pointer, '/a');
  });

  it('never quotes the filter values in the message', () => {
    const e = refusal({ secret: { $gt: { token: 'hunter2' } } });
    assert.doesNotMatch(e.message, /hunter2/);
  });
});
