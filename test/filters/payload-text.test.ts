import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterableText } from '../../src/filters/payload-text.js';

describe('the text a payload is filtered as', () => {
  it('is the payload itself (null) when jsonb can take it', () => {
    for (const ok of [
      '{"a":1}',
      '{"a":"caf\\u00e9"}',
      '{"a":"\\ud83d\\ude00"}',
      '{"a":"\\\\u0000"}',
      '"\\\\ud800"',
    ])
      assert.equal(filterableText(Buffer.from(ok)), null, ok);
  });

  it('replaces the NUL escape and unpaired surrogate escapes by U+FFFD, nothing else', () => {
    const cases: [string, string][] = [
      ['{"a":"x\\u0000y"}', '{"a":"x\\ufffdy"}'],
      ['{"a":"\\ud800"}', '{"a":"\\ufffd"}'],
      ['{"a":"\\uDC00\\uD83D\\uDE00"}', '{"a":"\\ufffd\\uD83D\\uDE00"}'],
      ['{"\\u0000":"\\\\\\u0000"}', '{"\\ufffd":"\\\\\\ufffd"}'],
      ['["\\ud800\\ud800\\udc00"]', '["\\ufffd\\ud800\\udc00"]'],
    ];
    for (const [payload, safe] of cases) {
      assert.equal(filterableText(payload), safe, payload);
      assert.deepEqual(JSON.parse(filterableText(payload)!), JSON.parse(safe));
    }
  });

  it('takes a long payload in one linear pass', () => {
    const payload = `{"a":"${'\\u0041'.repeat(50_000)}\\u0000"}`;
    assert.equal(filterableText(payload)?.endsWith('\\ufffd"}'), true);
  });
});
