/**
 * The indexes that keep a tenant's reads within the tenant's own rows: the events log
 * (GET /v1/messages) and the deliveries list (GET /v1/deliveries) walk them. They are not in a
 * migration: a plain CREATE INDEX on a large `messages` table blocks enqueue for the whole build
 * (seconds on millions of messages), so each API process builds them CONCURRENTLY in the
 * background at start (roles.ts), as retention builds the payload index
 * (src/retention/payload-index.ts). Until they are valid both reads are correct, only slower.
 */
import { type Sql, withoutStatementTimeout } from '../db/connect.js';

/** A tenant's messages in id (= acceptance time) order: the events log, a tenant's deliveries. */
export const MESSAGE_LOG_INDEX = 'messages_tenant_id_idx';
/** The same within one event type: an `event_type` filter reads only the messages that have it. */
export const MESSAGE_EVENT_TYPE_INDEX = 'messages_tenant_event_type_idx';

const INDEXES: { name: string; columns: string }[] = [
  { name: MESSAGE_LOG_INDEX, columns: '(tenant_id, id)' },
  { name: MESSAGE_EVENT_TYPE_INDEX, columns: '(tenant_id, event_type, id)' },
];

/** Arbitrary constant: the advisory lock that lets one process at a time build the indexes. */
const INDEX_LOCK_KEY = 727_274_016;

/**
 * Builds each index that is missing or was left INVALID by a build that died half-way (dropped
 * and built again). Under a session advisory lock, so that a second process starting meanwhile
 * does not drop an index the first is building; that process just skips and returns false. On a
 * connection without the API pool's statement_timeout: a build takes as long as the table is
 * large. Returns true when every index is valid now.
 */
export async function ensureMessageIndexes(sql: Sql): Promise<boolean> {
  return withoutStatementTimeout(sql, async (connection) => {
    const [lock] = await connection<
      { locked: boolean }[]
    >`SELECT pg_try_advisory_lock(${INDEX_LOCK_KEY}) AS locked`;
    if (!lock?.locked) return false;
    try {
      for (const index of INDEXES) {
        const [row] = await connection<{ valid: boolean | null }[]>`
          SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(${index.name})) AS valid`;
        if (row?.valid === true) continue;
        // Both statements refuse to run in a transaction block; postgres.js sends each alone.
        if (row?.valid === false) await connection.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${index.name}`);
        await connection.unsafe(
          `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${index.name} ON messages ${index.columns}`,
        );
      }
      return true;
    } finally {
      await connection`SELECT pg_advisory_unlock(${INDEX_LOCK_KEY})`;
    }
  });
}
