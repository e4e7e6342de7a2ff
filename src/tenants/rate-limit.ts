/**
 * The per-key enqueue rate limit, shared by every API process through one token-bucket row per
 * key (api_key_buckets). One statement per enqueue request of a limited key: the row lock
 * serialises concurrent requests for the same key for the length of that UPDATE only (never a
 * transaction), and every SET expression reads the row as locked, so two processes can never
 * both spend the same tokens. The clock is the database's, the same for every process.
 */
import type { Sql } from '../db/connect.js';

export type RateDecision = { granted: true } | { granted: false; retryAfterSeconds: number };

/**
 * How many items one request may carry, and the bucket's capacity: one second's worth, but never
 * less than one item, so a key limited to 0.5/s may still send one item every two seconds.
 */
export function burstOf(rate: number): number {
  return Math.max(rate, 1);
}

/**
 * Takes `items` tokens from the key's bucket (capacity: `burstOf(rate)`, refilled at `rate` per
 * second), or none when there are not enough. Returns when enough will be there again.
 */
export async function takeTokens(
  sql: Sql,
  keyId: string,
  rate: number,
  items: number,
): Promise<RateDecision> {
  // `available` is written out twice because SET cannot name another SET expression; both read
  // the old row. greatest() keeps updated_at from going backwards between two processes' clocks
  // at microsecond level.
  const burst = burstOf(rate);
  const initial = items <= burst ? burst - items : burst;
  const [row] = await sql<{ tokens: number; last_granted: boolean }[]>`
    WITH p AS (SELECT ${burst}::float8 AS burst, ${items}::float8 AS items)
    INSERT INTO api_key_buckets AS b (key_id, tokens, updated_at, last_granted)
    SELECT ${keyId}, ${initial}::float8, clock_timestamp(), p.items <= p.burst FROM p
    ON CONFLICT (key_id) DO UPDATE SET
      last_granted = least(${burst}::float8, b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)) * ${rate}::float8) >= ${items}::float8,
      tokens = least(${burst}::float8, b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)) * ${rate}::float8)
               - CASE WHEN least(${burst}::float8, b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)) * ${rate}::float8) >= ${items}::float8
                      THEN ${items}::float8 ELSE 0 END,
      updated_at = greatest(b.updated_at, clock_timestamp())
    RETURNING tokens, last_granted`;
  if (row!.last_granted) return { granted: true };
  return { granted: false, retryAfterSeconds: Math.max(1, Math.ceil((items - row!.tokens) / rate)) };
}
