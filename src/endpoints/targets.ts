/**
 * Which addresses an endpoint may point at. Partner URLs are user input; without this guard an
 * API caller could make hookpost POST into the private network (SSRF). Checked on the literal
 * host at create/update time and on every resolved address at send time (dispatch/).
 */
import ipaddr from 'ipaddr.js';

/** True for loopback, private, link-local, unique-local, CGNAT and other non-public ranges. */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() !== 'unicast';
}

/** True for `localhost` names and literal addresses in non-public ranges ([v6] brackets allowed). */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || isPrivateAddress(host);
}

/** Returns a reason the URL is not allowed as a delivery target, or undefined when it is. */
export function urlProblem(raw: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username || url.password) return 'must not contain credentials; use custom headers instead';
  if (url.hash) return 'must not contain a fragment';
  if (allowPrivate) return undefined;
  if (isPrivateHost(url.hostname)) {
    return 'points at a private or loopback address (set HOOKPOST_ALLOW_PRIVATE_TARGETS=true to allow)';
  }
  return undefined;
}
