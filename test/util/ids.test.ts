/** Public ids: the format hookpost_id() makes too, and a batch's ids in ascending order. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idTimestampMs, newId, newIds } from '../../src/ids.js';

describe('ids', () => {
  it('newId: prefix, 12 hex digits of milliseconds, 20 random hex digits', () => {
    const id = newId('dlv_', 0x18f00000000);
    assert.match(id, /^dlv_018f00000000[0-9a-f]{20}$/);
    assert.equal(idTimestampMs(id), 0x18f00000000);
    assert.notEqual(newId('dlv_'), newId('dlv_'));
  });

  it('newIds: distinct, ascending, of this millisecond (a batch appends to its primary key in order)', () => {
    const before = Date.now();
    const ids = newIds('msg_', 1000);
    assert.equal(ids.length, 1000);
    assert.equal(new Set(ids).size, 1000);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `ids[${i - 1}] < ids[${i}]`);
    for (const id of ids) assert.ok(idTimestampMs(id) >= before && idTimestampMs(id) <= Date.now());
    assert.deepEqual(newIds('msg_', 0), []);
  });
});
