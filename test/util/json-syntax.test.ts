/** jsonSyntaxErrorAt: the position V8 would report, found without quoting the text. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonSyntaxErrorAt } from '../../src/util/raw-json.js';

describe('jsonSyntaxErrorAt', () => {
  it('says -1 for valid JSON, deep nesting included', () => {
    for (const text of [
      '1',
      ' "a" ',
      '{"a":[1,2.5e-3,true,false,null,{}],"b":"\\u00e9\\n"}',
      '[]',
      `${'['.repeat(100000)}${']'.repeat(100000)}`,
    ]) {
      assert.equal(jsonSyntaxErrorAt(text), -1, text.slice(0, 40));
    }
  });

  it('finds the fault where JSON.parse does', () => {
    const bad = [
      '{"a":}',
      '{"a" 1}',
      '[1,2',
      '[1,]',
      '{,}',
      '{"a":1,}',
      'tru',
      '"abc',
      '01',
      '1.',
      '-',
      '1e',
      '[1 2]',
      '{"a":1}}',
      '{"a":1} x',
      '"a\\x"',
      '"\\u12g4"',
      '"tab\there"',
      '',
      '   ',
      '{"a":[}',
      '[{]',
      'nul',
      '{"a":-}',
    ];
    for (const text of bad) {
      let v8: number | undefined;
      try {
        JSON.parse(text);
        assert.fail(`${text} parses`);
      } catch (error) {
        const match = /at position (\d+)/.exec((error as Error).message);
        if (/end of JSON input/.test((error as Error).message)) v8 = text.length;
        else if (match) v8 = Number(match[1]);
      }
      const ours = jsonSyntaxErrorAt(text);
      assert.ok(ours >= 0 && ours <= text.length, `${text}: ${ours}`);
      if (v8 !== undefined) assert.equal(ours, v8, text);
    }
  });
});
