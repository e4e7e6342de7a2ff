/**
 * Which addresses an endpoint may point at. Partner URLs are user input; without this guard an
 * API caller could make hookpost POST into the private network (SSRF). Checked on the literal
 * host at create/update time and on every resolved address at send time (dispatch/).
 */
import ipaddr from 'ipaddr.js';

/**
 * The IPv4 address carried in the last 32 bits of an IPv6 address that only wraps one, or
 * undefined: IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96`, the deprecated
 * IPv4-compatible `::/96`, and the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), through
 * which a DNS64 resolver hands out every IPv4-only partner. `::` and `::1` are themselves.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const zeros = (from: number, to: number) => p.slice(from, to).every((part) => part === 0);
  const mapped = zeros(0, 5) && p[5] === 0xffff;
  const translated = zeros(0, 4) && p[4] === 0xffff && p[5] === 0;
  const compatible = zeros(0, 6) && !(p[6] === 0 && p[7]! <= 1);
  const nat64 = p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6);
  if (!mapped && !translated && !compatible && !nat64) return undefined;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

/**
 * True for loopback, private, link-local, unique-local, CGNAT and other non-public ranges. An
 * IPv6 address that wraps an IPv4 one is judged by the IPv4 address (`[::7f00:1]` reaches
 * 127.0.0.1 on many stacks; `64:ff9b::808:808` is a public host behind NAT64). Other
 * translation ranges (6to4, Teredo, the local-use NAT64 prefix 64:ff9b:1::/48) stay blocked.
 */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  const judged = parsed.kind() === 'ipv6' ? (embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed) : parsed;
  return judged.range() !== 'unicast';
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
