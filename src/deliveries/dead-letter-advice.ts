/**
 * What an attempt's error class says about its cause, and what an operator does about it. Pure
 * functions over the stable error classes the sender records (dispatch/sender.ts: `http_503`,
 * `timeout`, `connection_refused`, …), used by the dead-letter analysis
 * (deliveries/dead-letter-patterns.ts). Where hookpost itself caused the failure (a private
 * address it refused, a secret it cannot decrypt, its egress proxy, a certificate its tls settings
 * do not trust) the advice names the setting to change: no partner can fix those.
 */

/**
 * The groups the patterns are judged by. `hookpost_config`: hookpost's own settings stopped the
 * request before any partner saw it.
 */
export type ErrorCategory =
  | 'hookpost_config'
  | 'tls'
  | 'auth'
  | 'rate_limited'
  | 'rejected'
  | 'moved'
  | 'unreachable'
  | 'server_error'
  | 'timeout'
  | 'other';

/** Failures caused by hookpost's configuration, not by the partner. */
const CONFIG_CLASSES = new Set(['private_address_blocked', 'secret_unavailable', 'proxy_unavailable']);
const UNREACHABLE_CLASSES = new Set([
  'connection_refused',
  'connection_reset',
  'connect_timeout',
  'host_unreachable',
  'dns_error',
  'network_error',
]);

/** The category of one error class (`http_401`, `tls_error`, …). */
export function errorCategory(errorClass: string): ErrorCategory {
  if (CONFIG_CLASSES.has(errorClass)) return 'hookpost_config';
  // tls_error today; a finer class naming the certificate (expired, untrusted) lands here too.
  if (/tls|cert/.test(errorClass)) return 'tls';
  if (errorClass === 'http_401' || errorClass === 'http_403' || errorClass === 'auth_failed') return 'auth';
  if (errorClass === 'http_429') return 'rate_limited';
  if (errorClass === 'redirect_not_followed' || errorClass === 'gone' || errorClass === 'http_410')
    return 'moved';
  if (errorClass === 'timeout') return 'timeout';
  if (UNREACHABLE_CLASSES.has(errorClass)) return 'unreachable';
  if (errorClass === 'protocol_error') return 'server_error';
  const status = /^http_(\d{3})$/.exec(errorClass)?.[1];
  if (status?.startsWith('5')) return 'server_error';
  if (status?.startsWith('4') || errorClass === 'invalid_request') return 'rejected';
  return 'other';
}

/**
 * What to do about dead letters whose last error was `errorClass`: one sentence, ending in the
 * replay (by that error class, unless `replay` says otherwise: a set of several classes).
 */
export function errorClassAdvice(
  errorClass: string,
  replay = `then replay with error_class=${errorClass}.`,
): string {
  const patch = 'PATCH /v1/endpoints/{id}';
  switch (errorClass) {
    case 'private_address_blocked':
      return (
        "hookpost refused the connection because the endpoint's host resolves to a private, loopback " +
        'or link-local address; for an intended internal or local target set ' +
        `HOOKPOST_ALLOW_PRIVATE_TARGETS=true and restart hookpost, otherwise correct the endpoint's url; ${replay}`
      );
    case 'secret_unavailable':
      return (
        "hookpost cannot decrypt the endpoint's signing secret: it was sealed with a key this process " +
        'does not have; set HOOKPOST_SECRET_KEY to that key, or add it to HOOKPOST_SECRET_KEY_PREVIOUS, ' +
        `and restart hookpost; ${replay}`
      );
    case 'proxy_unavailable':
      return (
        'the egress proxy refused or did not answer; check the proxy HOOKPOST_EGRESS_PROXY names ' +
        `(address, credentials, its allow-list) or correct that setting and restart hookpost; ${replay}`
      );
    case 'auth_failed':
      return `the endpoint's OAuth2 token request was refused; check its auth settings (token_url, client_id, client_secret, scope) with ${patch}, ${replay}`;
    case 'timeout':
      return `the partner answers slower than HOOKPOST_REQUEST_TIMEOUT_MS; check its p95 (GET /v1/endpoints/{id}/health), ${replay}`;
    case 'dns_error':
      return `the endpoint's host name does not resolve; check the host in its url (and HOOKPOST_DNS_SERVERS when set), ${replay}`;
    case 'invalid_request':
      return `the endpoint's stored headers are not valid HTTP; correct its headers (${patch}), ${replay}`;
    case 'protocol_error':
      return `the partner's server answers with something that is not valid HTTP; ask them to fix it, ${replay}`;
    case 'redirect_not_followed':
    case 'gone':
      return `the endpoint URL moved or is gone; update the endpoint's url, ${replay}`;
  }
  const category = errorCategory(errorClass);
  if (category === 'tls') {
    return (
      'the TLS handshake failed (a certificate that is untrusted, expired or for another name); for a ' +
      "partner's private CA add it to the endpoint's tls.ca_certificates, for a partner that requires a " +
      `client certificate set tls.client_certificate and tls.client_key (${patch}), otherwise the partner ` +
      `must fix their certificate; ${replay}`
    );
  }
  if (category === 'unreachable') {
    return `the partner's server does not accept connections; check the host and port in the endpoint's url and that their server is up, ${replay}`;
  }
  const status = /^http_(\d{3})$/.exec(errorClass)?.[1];
  if (status === '401' || status === '403') {
    return `the partner refuses hookpost's credentials; update the endpoint's headers or auth (${patch}) with the ones they expect, ${replay}`;
  }
  if (status === '429') {
    return `the partner limits the request rate; set the endpoint's rate_limit_per_second below their limit, ${replay}`;
  }
  if (status?.startsWith('5')) {
    return `the partner's server fails these requests; read the response snippets (GET /v1/deliveries/{id}), get it fixed (if they pass on a later try, raise max_attempts for this endpoint), ${replay}`;
  }
  if (status?.startsWith('4')) {
    return `the partner rejects these payloads (no retry for a ${status}); read the response snippets, fix the payload or the endpoint settings, ${replay}`;
  }
  return `read the attempts of a few of them (GET /v1/deliveries/{id}) to see what failed, ${replay}`;
}
