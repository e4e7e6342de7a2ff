/**
 * Forward-only migrations from sql/NNNN_name.sql. Safe when many processes start at once:
 * everything happens under one session-level advisory lock, each file runs in its own
 * transaction and is recorded with a checksum, so a file is applied exactly once.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isReadOnlyRefusal, REFUSE_IF_READ_ONLY, type Sql, withoutStatementTimeout } from './connect.js';

/** Arbitrary constant shared by every hookpost process: the key of the migration lock. */
const MIGRATION_LOCK_KEY = 727_274_001;
export const SQL_DIR = fileURLToPath(new URL('../../../sql/', import.meta.url));

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/** Reads sql/ and checks the numbering is 0001, 0002, … without gaps or duplicates. */
export async function readMigrations(dir = SQL_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => /^\d{4}_[a-z0-9_]+\.sql$/.test(n)).sort();
  const files: MigrationFile[] = [];
  for (const [index, name] of names.entries()) {
    const version = Number(name.slice(0, 4));
    if (version !== index + 1) throw new Error(`migration numbering has a gap or duplicate at ${name}`);
    const sql = await readFile(new URL(name, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), 'utf8');
    files.push({ version, name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return files;
}

/** Applies every migration not yet applied; returns the names it applied. */
export async function migrate(sql: Sql, dir = SQL_DIR): Promise<string[]> {
  const files = await readMigrations(dir);
  // A migration takes as long as the tables it changes are large: never cut by the API pool's
  // statement_timeout (nor the advisory lock's wait for another process's migrations).
  return withoutStatementTimeout(sql, async (connection) => {
    await connection`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    try {
      await connection`
        CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          checksum text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`;
      const done = await connection<{ version: number; checksum: string }[]>`
        SELECT version, checksum FROM schema_migrations`;
      const applied = new Map(done.map((row) => [row.version, row.checksum]));
      const ran: string[] = [];
      for (const file of files) {
        const previous = applied.get(file.version);
        if (previous !== undefined) {
          if (previous !== file.checksum)
            throw new Error(`migration ${file.name} was changed after it was applied`);
          continue;
        }
        await connection.unsafe('BEGIN');
        try {
          await connection.unsafe(file.sql);
          await connection`
            INSERT INTO schema_migrations (version, name, checksum)
            VALUES (${file.version}, ${file.name}, ${file.checksum})`;
          await connection.unsafe('COMMIT');
        } catch (error) {
          await connection.unsafe('ROLLBACK');
          throw new Error(`migration ${file.name} failed: ${(error as Error).message}`);
        }
        ran.push(file.name);
      }
      return ran;
    } finally {
      await connection`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;
    }
  });
}

/**
 * What /readyz answers: `ready` when every migration has been applied and the server takes
 * writes; `read_only` when it answers but cannot write (a standby, reached through a single-host
 * URL such as a DNS name or proxy that leads to it, or a server made read-only: every enqueue
 * would be refused); `not_ready` when it is unreachable or migrations are missing. One query.
 */
export async function readiness(sql: Sql, expected: number): Promise<'ready' | 'read_only' | 'not_ready'> {
  try {
    // One round trip, on one session: the refusal (which closes a session on a standby) first.
    const [, rows] = (await sql.unsafe(
      `${REFUSE_IF_READ_ONLY}; SELECT count(*)::int AS count FROM schema_migrations`,
    )) as unknown as [unknown, { count: number }[]];
    return (rows?.[0]?.count ?? -1) >= expected ? 'ready' : 'not_ready';
  } catch (error) {
    return isReadOnlyRefusal(error) ? 'read_only' : 'not_ready';
  }
}

/** True when every migration file has been applied. */
export async function migrationsApplied(sql: Sql, expected: number): Promise<boolean> {
  const rows = await sql<{ count: number }[]>`
    SELECT count(*)::int AS count FROM schema_migrations`.catch(() => [{ count: -1 }]);
  return (rows[0]?.count ?? -1) >= expected;
}
