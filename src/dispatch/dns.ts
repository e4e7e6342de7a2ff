/**
 * Name resolution for outbound connections. `dns.lookup` (getaddrinfo) runs on libuv's four
 * worker threads, cannot be cancelled and caches nothing: one partner whose DNS hangs holds a
 * thread per new connection until the OS gives up, and every other endpoint's connections queue
 * behind it. Here names are resolved by c-ares (`Resolver.resolve4/resolve6`, asynchronous on the
 * event loop, no thread held), answers are cached for their TTL, concurrent lookups of one name
 * share one query, and each lookup is bounded by the attempt's timeout.
 *
 * A name DNS says does not exist is looked up once more with the system resolver (`/etc/hosts`,
 * search domains, `localhost`), deduplicated and cached briefly, so what worked before still
 * works; a name whose DNS does not answer never reaches getaddrinfo.
 */
import dns, { type LookupAddress } from 'node:dns';

export interface DnsCacheOptions {
  /** DNS servers (`1.1.1.1`, `127.0.0.1:5353`, `[::1]:53`); empty or undefined: those of /etc/resolv.conf. */
  servers?: string[] | undefined;
  /** Longest a lookup may take; the attempt's own deadline. */
  timeoutMs: number;
  /** Answers are kept for their TTL, at most this long. */
  maxTtlSeconds: number;
  /** When true, every answer is checked with `isBlocked` and refused as a whole if one address is. */
  isBlocked?: ((address: string) => boolean) | undefined;
}

/** How long a name that does not resolve at all is remembered (no SOA minimum is exposed by Node). */
const NEGATIVE_TTL_MS = 5000;
/** How long an answer of the system resolver is kept: it gives no TTL. */
const FALLBACK_TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;
/** Resolver errors after which the system resolver may still know the name. */
const FALLBACK_CODES = new Set<string>([dns.NODATA, dns.NOTFOUND, dns.CONNREFUSED, dns.REFUSED, dns.NOTIMP]);

interface Entry {
  addresses: LookupAddress[] | undefined;
  error: NodeJS.ErrnoException | undefined;
  expiresAt: number;
}

/** Raised when an answer contains a blocked address; classified as `private_address_blocked`. */
export class BlockedAddressError extends Error {
  code = 'HOOKPOST_PRIVATE_TARGET';
}

function dnsError(code: string, hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`DNS lookup of ${hostname} failed: ${code}`);
  error.code = code;
  return error;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export class DnsCache {
  private readonly resolver: dns.promises.Resolver;
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Entry>>();

  constructor(private readonly options: DnsCacheOptions) {
    // c-ares retries on its own; two tries within the attempt's budget, then our timer decides.
    const perTry = Math.max(50, Math.min(5000, Math.floor(options.timeoutMs / 2)));
    this.resolver = new dns.promises.Resolver({ timeout: perTry, tries: 2 });
    if (options.servers && options.servers.length > 0) this.resolver.setServers(options.servers);
  }

  /**
   * Every address of `hostname` (IPv4 first), from the cache while its TTL lasts. Rejects with
   * the resolver's code (ENOTFOUND, ETIMEOUT, …) or a BlockedAddressError; never takes longer
   * than the timeout.
   */
  async resolve(hostname: string): Promise<LookupAddress[]> {
    const key = hostname.toLowerCase();
    let entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= Date.now()) entry = await this.withDeadline(key, this.query(key));
    if (entry.error) throw entry.error;
    const addresses = entry.addresses!;
    // Checked on every use, cached or not: the check is what stands between a partner's DNS and the LAN.
    if (this.options.isBlocked && addresses.some((a) => this.options.isBlocked!(a.address))) {
      throw new BlockedAddressError(`${hostname} resolves to a private address`);
    }
    return addresses;
  }

  /** A `lookup` for net.connect / undici's `connect` options. */
  readonly lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    this.resolve(hostname).then(
      (all) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const list = family === 0 ? all : all.filter((a) => a.family === family);
        if (list.length === 0) return callback(dnsError(dns.NODATA, hostname), '', 0);
        if (options.all) return callback(null, list);
        callback(null, list[0]!.address, list[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  /** One query per name at a time; the entry is stored when it settles, whoever is still waiting. */
  private query(key: string): Promise<Entry> {
    let promise = this.pending.get(key);
    if (!promise) {
      promise = this.resolveFresh(key).then((entry) => {
        this.pending.delete(key);
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        if (entry.expiresAt > Date.now()) this.entries.set(key, entry);
        return entry;
      });
      this.pending.set(key, promise);
    }
    return promise;
  }

  private withDeadline(hostname: string, query: Promise<Entry>): Promise<Entry> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Entry>((resolve) => {
      timer = setTimeout(
        () => resolve({ addresses: undefined, error: dnsError(dns.TIMEOUT, hostname), expiresAt: 0 }),
        this.options.timeoutMs,
      );
    });
    return Promise.race([query, deadline]).finally(() => clearTimeout(timer));
  }

  private async resolveFresh(hostname: string): Promise<Entry> {
    const [v4, v6] = await Promise.allSettled([
      this.resolver.resolve4(hostname, { ttl: true }),
      this.resolver.resolve6(hostname, { ttl: true }),
    ]);
    const records = [
      ...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 })) : []),
    ];
    const now = Date.now();
    if (records.length > 0) {
      const ttl = Math.min(this.options.maxTtlSeconds, ...records.map((r) => r.ttl));
      const addresses = records.map((r) => ({ address: r.address, family: r.family }));
      return { addresses, error: undefined, expiresAt: now + ttl * 1000 };
    }
    const codes = [v4, v6].map((r) =>
      r.status === 'rejected' ? (r.reason as NodeJS.ErrnoException).code : '',
    );
    if (!codes.every((code) => FALLBACK_CODES.has(code ?? ''))) {
      // A timeout or SERVFAIL: not remembered, the next attempt asks again.
      const code = codes.find((c) => c && !FALLBACK_CODES.has(c)) ?? dns.SERVFAIL;
      return { addresses: undefined, error: dnsError(code, hostname), expiresAt: 0 };
    }
    return this.systemLookup(hostname);
  }

  private async systemLookup(hostname: string): Promise<Entry> {
    try {
      const addresses = await dns.promises.lookup(hostname, { all: true, order: 'ipv4first' });
      return { addresses, error: undefined, expiresAt: Date.now() + FALLBACK_TTL_MS };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? dns.NOTFOUND;
      return {
        addresses: undefined,
        error: dnsError(code, hostname),
        expiresAt: Date.now() + NEGATIVE_TTL_MS,
      };
    }
  }
}
