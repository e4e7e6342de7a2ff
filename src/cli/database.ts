/**
 * Database access for the one-shot commands (`migrate`, `dead-letters`, `replay`, `api-keys`,
 * `purge`): they talk to PostgreSQL
 * directly, like `hookpost migrate`, through the same functions the API uses, so there is one
 * code path and no API URL or token to hand around. DATABASE_URL when set, else the embedded
 * database under HOOKPOST_DATA_DIR.
 */
import type { Config } from '../config.js';
import { connect, type Sql } from '../db/connect.js';
import { DatabaseError, openDatabase, portAnswers, verifyConnection } from '../db/database.js';
import { embeddedClusterExists } from '../db/embedded.js';
import { migrationsApplied, readMigrations } from '../db/migrate.js';
import { createLogger, type Logger, terminalLogs } from '../log.js';

/**
 * Runs `work` against the database and closes everything afterwards, also on failure. Every
 * command but `migrate` needs the schema up to date first.
 */
export async function withDatabase<T>(
  config: Config,
  work: (sql: Sql) => Promise<T>,
  options: { requireSchema: boolean; log?: Logger } = { requireSchema: true },
): Promise<T> {
  await refuseAnotherHookpostsDatabase(config);
  // Only `migrate` may create the embedded database: the others, run in a folder without one,
  // say so instead of creating an empty one and then asking for a migration.
  const database = await openDatabase(config, options.log ?? createLogger('warn', terminalLogs(config)), {
    mustExist: options.requireSchema,
  });
  const sql = connect(database.url, { max: 2, applicationName: 'hookpost-cli' });
  try {
    // 28P01: the embedded server answering on the port is not this data dir's (another folder's).
    const refused = await sql`select 1`.then(
      () => undefined,
      (error: { code?: string }) => error.code,
    );
    if (database.embedded && refused === '28P01') throw new DatabaseError(notOurServer(config));
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

/** What to do when this folder's database is not the embedded server answering on the port. */
function notOurServer(config: Config): string {
  return (
    `the embedded PostgreSQL answering on 127.0.0.1:${config.embeddedPort} is not the one in ${config.dataDir} ` +
    '(another hookpost, started in another folder, runs it). Run this in the folder where that hookpost ' +
    'was started, or set HOOKPOST_DATA_DIR to its .hookpost folder, or DATABASE_URL to your PostgreSQL'
  );
}

/**
 * Without DATABASE_URL and without a database in HOOKPOST_DATA_DIR, an embedded server that
 * answers on the port belongs to another folder's hookpost: connecting to it with this folder's
 * password would only say "password authentication failed". Say what is missing instead.
 */
async function refuseAnotherHookpostsDatabase(config: Config): Promise<void> {
  if (config.databaseUrl || embeddedClusterExists(config.dataDir)) return;
  if (!(await portAnswers(config.embeddedPort))) return;
  throw new DatabaseError(
    `no hookpost database found: DATABASE_URL is unset and there is none in ${config.dataDir} (HOOKPOST_DATA_DIR). ` +
      `An embedded PostgreSQL answers on 127.0.0.1:${config.embeddedPort}, but it belongs to a hookpost started ` +
      'in another folder: run this there, or set HOOKPOST_DATA_DIR to its .hookpost folder, or DATABASE_URL ' +
      'to your PostgreSQL',
  );
}
