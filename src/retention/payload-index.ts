/**
 * The index payload expiry walks: messages whose payload is still there, in id (= creation)
 * order, so a pass reads the oldest entries and stops, and an erased message leaves the index.
 * Built by the pass with CREATE INDEX CONCURRENTLY, not by the migration, because a plain build
 * blocks enqueue for its whole duration (9.6 s for 10 M messages; 7.8 s concurrently, with enqueue
 * going on). A build that failed half-way leaves an INVALID index behind: it is dropped and built
 * again. Both statements refuse to run in a transaction block; postgres.js sends them alone.
 */
import type { Sql } from '../db/connect.js';

export const PAYLOAD_INDEX = 'messages_payload_live_idx';

/** True once the index exists and is valid; builds it otherwise (returns true when done). */
export async function ensurePayloadIndex(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ valid: boolean | null }[]>`
    SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(${PAYLOAD_INDEX})) AS valid`;
  if (row?.valid === true) return true;
  if (row?.valid === false) await sql.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${PAYLOAD_INDEX}`);
  await sql.unsafe(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${PAYLOAD_INDEX} ON messages (id) WHERE payload_expired_at IS NULL`,
  );
  return true;
}
