/**
 * PostgreSQL connection strings as libpq and postgres.js read them, several hosts included:
 * `postgres://user:password@h1:5432,h2:5432/db?target_session_attrs=read-write`. A WHATWG URL
 * holds one host, so the host list is taken apart here and the rest parsed as a URL.
 */

export interface DatabaseUrl {
  /** `postgres:` or `postgresql:`. */
  protocol: string;
  user: string;
  password: string;
  /** Each `host:port` of the list, in order (the port is empty when left to the default). */
  hosts: { host: string; port: string }[];
  database: string;
  params: URLSearchParams;
}

const SHAPE = /^(postgres(?:ql)?:)\/\/(?:([^@/?#]*)@)?([^/?#]*)([/?#].*)?$/;
// A name or IPv4 address, or an IPv6 address in brackets; then an optional port.
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/;

/** The parts of `url`, or undefined when it is not a postgres:// URL with valid hosts and ports. */
export function parseDatabaseUrl(url: string): DatabaseUrl | undefined {
  const match = SHAPE.exec(url);
  if (!match) return undefined;
  const [, protocol, credentials = '', hostList, rest = ''] = match;
  const hosts: DatabaseUrl['hosts'] = [];
  for (const item of hostList!.split(',')) {
    const host = HOST.exec(item);
    if (!host) return undefined;
    const port = host[2] ?? '';
    if (port !== '' && (Number(port) < 1 || Number(port) > 65535)) return undefined;
    hosts.push({ host: host[1]!, port });
  }
  // The rest (credentials, path, query) parses as a URL around a stand-in host.
  const standIn = `${protocol}//${credentials ? `${credentials}@` : ''}host${rest}`;
  if (!URL.canParse(standIn)) return undefined;
  const parsed = new URL(standIn);
  return {
    protocol: protocol!,
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    hosts,
    database: decodeURIComponent(parsed.pathname.slice(1)),
    params: parsed.searchParams,
  };
}

/** Where a connection string points, without its password: `postgres://user@h1:p1,h2:p2/db`. */
export function describeDatabaseUrl(url: string): string {
  const u = parseDatabaseUrl(url);
  if (!u) return 'an unparseable URL';
  const hosts = u.hosts.map((h) => (h.port ? `${h.host}:${h.port}` : h.host)).join(',');
  return `${u.protocol}//${u.user ? `${u.user}@` : ''}${hosts}/${u.database}`;
}

/** The same connection string naming another database (hosts, credentials and options kept). */
export function withDatabase(url: string, database: string): string {
  const match = SHAPE.exec(url);
  if (!match) throw new Error('not a postgres:// URL');
  const [, protocol, credentials, hostList, rest = ''] = match;
  const query = rest.indexOf('?');
  const tail = query === -1 ? '' : rest.slice(query);
  return `${protocol}//${credentials !== undefined ? `${credentials}@` : ''}${hostList}/${encodeURIComponent(database)}${tail}`;
}
