/** The SSRF guard's address check, including IPv6 forms that wrap an IPv4 address. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPrivateAddress, urlProblem } from '../../src/endpoints/targets.js';

describe('isPrivateAddress', () => {
  it('judges IPv4-compatible ::/96 by the embedded address', () => {
    for (const a of ['::7f00:1', '::127.0.0.1', '::a00:1', '::c0a8:101', '::a9fe:a9fe', '::0:0:0:2']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    assert.equal(isPrivateAddress('::808:808'), false, '::8.8.8.8 wraps a public address');
  });

  it('lets NAT64 64:ff9b::/96 reach public IPv4 hosts, not private ones', () => {
    assert.equal(isPrivateAddress('64:ff9b::808:808'), false, 'DNS64 answer for 8.8.8.8');
    assert.equal(isPrivateAddress('64:ff9b::5db8:d822'), false, 'DNS64 answer for 93.184.216.34');
    for (const a of ['64:ff9b::7f00:1', '64:ff9b::a00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::6440:1']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    assert.equal(isPrivateAddress('64:ff9b:1::808:808'), true, 'local-use NAT64 stays blocked');
  });

  it('keeps mapped, translated and plain ranges as before', () => {
    for (const a of [
      '::',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:0:7f00:1',
      '127.0.0.1',
      '10.1.2.3',
      'fe80::1',
      'fd00::1',
      '2002:7f00:1::1',
    ]) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::ffff:0:808:808']) {
      assert.equal(isPrivateAddress(a), false, a);
    }
  });

  it('refuses an endpoint URL with an IPv4-compatible loopback literal', () => {
    assert.match(urlProblem('http://[::7f00:1]:8080/hook', false) ?? '', /private or loopback/);
    assert.match(urlProblem('http://[64:ff9b::a00:1]/hook', false) ?? '', /private or loopback/);
    assert.equal(urlProblem('https://[64:ff9b::808:808]/hook', false), undefined);
  });
});
