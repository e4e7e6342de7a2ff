import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrayElementSpans, objectMemberSpans } from '../../src/util/raw-json.js';

describe('raw JSON spans', () => {
  it('cuts out a member value exactly as written', () => {
    const text = ' { "a" : 1.50 , "payload":{"x": [1, "}\\"]"], "é": 1e3 } ,"z":null}';
    const spans = objectMemberSpans(text);
    const p = spans.get('payload')!;
    assert.equal(text.slice(p.start, p.end), '{"x": [1, "}\\"]"], "é": 1e3 }');
    const a = spans.get('a')!;
    assert.equal(text.slice(a.start, a.end), '1.50');
    const z = spans.get('z')!;
    assert.equal(text.slice(z.start, z.end), 'null');
  });

  it('handles escaped backslashes before a closing quote', () => {
    const text = String.raw`{"payload":"a\\","b":"\"\\","c":1}`;
    JSON.parse(text);
    const spans = objectMemberSpans(text);
    const p = spans.get('payload')!;
    assert.equal(JSON.parse(text.slice(p.start, p.end)), 'a\\');
    const b = spans.get('b')!;
    assert.equal(JSON.parse(text.slice(b.start, b.end)), '"\\');
    assert.ok(spans.has('c'));
  });

  it('finds array elements', () => {
    const text = '{"items": [ {"payload": 1} , {"payload": "s,]"}, [] ]}';
    const items = objectMemberSpans(text).get('items')!;
    const spans = arrayElementSpans(text, items.start).map((s) => text.slice(s.start, s.end));
    assert.deepEqual(spans, ['{"payload": 1}', '{"payload": "s,]"}', '[]']);
  });
});
