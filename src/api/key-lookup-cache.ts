/**
 * What the API remembers of key lookups, and of the clients that keep sending tokens that match
 * no key. Both are bounded and evict their oldest entries one by one, so a flood of made-up tokens
 * can neither grow memory nor push the real keys out (the cache used to be cleared whole at
 * 10,000 entries, sending every real key back to the database at once). Pure: the clock is a
 * parameter.
 */
import type { ApiKey } from '../tenants/keys.js';

/** How long a found key is reused: bounds how late a revocation is seen (the contract allows 2 s). */
export const FOUND_TTL_MS = 1000;
/**
 * How long "no such key" is reused. Tokens are 32 random bytes made by hookpost, so one that
 * matched nothing cannot start matching later; the bound is on memory, not on correctness.
 */
export const MISSING_TTL_MS = 60_000;
/** Entries of each kind kept. */
export const MAX_ENTRIES = 10_000;

/** A Map that keeps at most `max` entries, dropping the oldest-inserted first. */
class BoundedMap<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * `fresh`: found within FOUND_TTL_MS, use it. `stale`: found before, look it up again (a real key,
 * never throttled). `missing`: matched no key within MISSING_TTL_MS.
 */
export type CachedLookup = { state: 'fresh'; key: ApiKey } | { state: 'stale' } | { state: 'missing' };

/** Found keys and missing ones, apart: misses never evict a found key. */
export class KeyLookupCache {
  private readonly found: BoundedMap<{ key: ApiKey; at: number }>;
  private readonly missing: BoundedMap<number>;

  constructor(max = MAX_ENTRIES) {
    this.found = new BoundedMap(max);
    this.missing = new BoundedMap(max);
  }

  /** What is remembered of a token's hash; undefined when it was never seen (or forgotten). */
  get(id: string, now: number): CachedLookup | undefined {
    const hit = this.found.get(id);
    if (hit) return now - hit.at < FOUND_TTL_MS ? { state: 'fresh', key: hit.key } : { state: 'stale' };
    const missedAt = this.missing.get(id);
    if (missedAt !== undefined && now - missedAt < MISSING_TTL_MS) return { state: 'missing' };
    return undefined;
  }

  set(id: string, key: ApiKey | undefined, now: number): void {
    if (key) {
      this.missing.delete(id);
      this.found.set(id, { key, at: now });
    } else {
      this.found.delete(id);
      this.missing.set(id, now);
    }
  }

  get sizes(): { found: number; missing: number } {
    return { found: this.found.size, missing: this.missing.size };
  }
}

/** Failed authentications one client address may cause per window before it is throttled. */
export const FAILURES_PER_WINDOW = 20;
export const FAILURE_WINDOW_MS = 10_000;

/**
 * Counts failed authentications per client address in fixed windows. An address over its budget
 * gets no more database lookups for unknown tokens until its window ends (the API answers 429 with
 * the seconds left); tokens already known to this process still pass, so a client sharing a
 * proxy's address with a guesser keeps working with its cached key.
 */
export class FailedAuthThrottle {
  private readonly windows: BoundedMap<{ start: number; count: number }>;

  constructor(
    private readonly limit = FAILURES_PER_WINDOW,
    private readonly windowMs = FAILURE_WINDOW_MS,
    maxAddresses = MAX_ENTRIES,
  ) {
    this.windows = new BoundedMap(maxAddresses);
  }

  /** Whole seconds until `address` may cause lookups again; 0 when it may now. */
  blockedForSeconds(address: string, now: number): number {
    const w = this.windows.get(address);
    if (!w || now - w.start >= this.windowMs || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  recordFailure(address: string, now: number): void {
    const w = this.windows.get(address);
    if (!w || now - w.start >= this.windowMs) this.windows.set(address, { start: now, count: 1 });
    else w.count += 1;
  }
}
