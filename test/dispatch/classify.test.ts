/** Error classification (dispatch/sender.ts) and outcome folding (endpoints/breaker.ts), directly. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextAttempt } from '../../src/deliveries/retry-policy.js';
import { classifyError } from '../../src/dispatch/sender.js';
import { summarizeOutcomes } from '../../src/endpoints/breaker.js';

const withCode = (code: string, cause?: string) =>
  Object.assign(new Error('message text is never read'), {
    code,
    ...(cause ? { cause: { code: cause } } : {}),
  });

describe('error classification', () => {
  it('maps stable error codes to classes, never message text', () => {
    const cases: [unknown, string][] = [
      [withCode('ECONNREFUSED'), 'connection_refused'],
      [withCode('ECONNRESET'), 'connection_reset'],
      [withCode('UND_ERR_SOCKET'), 'connection_reset'],
      [withCode('UND_ERR_CONNECT_TIMEOUT'), 'connect_timeout'],
      [withCode('UND_ERR_HEADERS_TIMEOUT'), 'timeout'],
      [withCode('ENOTFOUND'), 'dns_error'],
      [withCode('EHOSTUNREACH'), 'host_unreachable'],
      [withCode('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls_error'],
      [withCode('HPE_INVALID_HEADER_TOKEN'), 'protocol_error'],
      [withCode('', 'ECONNREFUSED'), 'connection_refused'],
      [new Error('ECONNREFUSED in the message only'), 'network_error'],
    ];
    for (const [error, errorClass] of cases) {
      assert.deepEqual(classifyError(error, false, false), { kind: 'retryable', errorClass }, errorClass);
    }
  });

  it('a private address is permanent; our deadline is a timeout; our shutdown is its own kind', () => {
    assert.deepEqual(classifyError(withCode('HOOKPOST_PRIVATE_TARGET'), false, false), {
      kind: 'permanent',
      errorClass: 'private_address_blocked',
    });
    assert.deepEqual(classifyError(withCode('', 'HOOKPOST_PRIVATE_TARGET'), false, false).kind, 'permanent');
    assert.deepEqual(classifyError(withCode('ECONNRESET'), true, false), {
      kind: 'retryable',
      errorClass: 'timeout',
    });
    assert.deepEqual(classifyError(withCode('ECONNRESET'), false, true), {
      kind: 'shutdown',
      errorClass: 'shutdown',
    });
  });

  it('the retry policy makes a shutdown due again at once, even on the last attempt', () => {
    const policy = { baseSeconds: 30, capSeconds: 3600, maxAttempts: 3, retryAfterMaxSeconds: 600 };
    const shutdown = classifyError(withCode('ECONNRESET'), false, true);
    assert.deepEqual(
      nextAttempt(3, shutdown, policy, () => 0.5),
      { status: 'failed', delayMs: 0, charged: false },
    );
    assert.equal(
      nextAttempt(3, { kind: 'retryable', errorClass: 'timeout' }, policy, () => 0.5).status,
      'dead_letter',
    );
  });
});

describe('outcome folding for the breaker', () => {
  it('per endpoint: successes reset the trailing count; permanent failures are neutral', () => {
    const s = summarizeOutcomes([
      { endpointId: 'a', outcome: 'retryable' },
      { endpointId: 'b', outcome: 'retryable' },
      { endpointId: 'a', outcome: 'success' },
      { endpointId: 'b', outcome: 'retryable' },
      { endpointId: 'a', outcome: 'retryable' },
      { endpointId: 'c', outcome: 'success' },
      { endpointId: 'b', outcome: 'permanent' },
    ]);
    assert.deepEqual(s, [
      { endpointId: 'a', hadSuccess: true, trailingFailures: 1, failures: 2 },
      { endpointId: 'b', hadSuccess: false, trailingFailures: 2, failures: 2 },
      { endpointId: 'c', hadSuccess: true, trailingFailures: 0, failures: 0 },
    ]);
  });

  it('an empty batch or only permanent failures fold to nothing', () => {
    assert.deepEqual(summarizeOutcomes([]), []);
    assert.deepEqual(summarizeOutcomes([{ endpointId: 'a', outcome: 'permanent' }]), []);
  });
});
