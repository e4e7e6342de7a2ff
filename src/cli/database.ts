/**
 * Database access for the one-shot commands (`migrate`, `dead-letters`, `replay`): they talk to PostgreSQL
 * directly, like `hookpost migrate`, through the same functions the API uses, so there is one
 * code path and no API URL or token to hand around. DATABASE_URL when set, else the embedded
 * database under HOOKPOST_DATA_DIR.
 */
import type { Config } from '../config.js';
import { connect, type Sql } from '../db/connect.js';
import { openDatabase, verifyConnection } from '../db/database.js';
import { migrationsApplied, readMigrations } from '../db/migrate.js';
import { createLogger, type Logger } from '../log.js';

/**
 * Runs `work` against the database and closes everything afterwards, also on failure. Every
 * command but `migrate` needs the schema up to date first.
 */
export async function withDatabase<T>(
  config: Config,
  work: (sql: Sql) => Promise<T>,
  options: { requireSchema: boolean; log?: Logger } = { requireSchema: true },
): Promise<T> {
  // Only `migrate` may create the embedded database: the others, run in a folder without one,
  // say so instead of creating an empty one and then asking for a migration.
  const database = await openDatabase(config, options.log ?? createLogger('warn'), {
    mustExist: options.requireSchema,
  });
  const sql = connect(database.url, { max: 2, applicationName: 'hookpost-cli' });
  try {
    await verifyConnection(sql, database);
    // An operator command never migrates on its own: it may be older or newer than the servers.
    if (options.requireSchema && !(await migrationsApplied(sql, (await readMigrations()).length))) {
      throw new Error('the database schema is not up to date: run `hookpost migrate` first');
    }
    return await work(sql);
  } finally {
    await sql.end({ timeout: 5 });
    await database.stop();
  }
}
