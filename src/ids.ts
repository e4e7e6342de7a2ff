/** Time-ordered public ids, the same format as the SQL function hookpost_id() (sql/0001_init.sql). */
import { randomBytes } from 'node:crypto';

/** `prefix` + 12 hex digits of Unix milliseconds + 20 random hex digits. */
export function newId(prefix: string, now = Date.now()): string {
  return prefix + now.toString(16).padStart(12, '0') + randomBytes(10).toString('hex');
}

/**
 * The creation time encoded in an id from newId() or hookpost_id(), in Unix milliseconds;
 * NaN when the id does not have that shape.
 */
export function idTimestampMs(id: string, prefixLength = 4): number {
  const hex = id.slice(prefixLength, prefixLength + 12);
  return /^[0-9a-f]{12}$/.test(hex) ? Number.parseInt(hex, 16) : Number.NaN;
}
