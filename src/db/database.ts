/** Picks the database: DATABASE_URL when set, else the embedded PostgreSQL under the data dir. */
import net from 'node:net';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from './connect.js';
import { embeddedClusterExists, embeddedUrl, startEmbeddedPostgres } from './embedded.js';
import { describeDatabaseUrl, parseDatabaseUrl } from './url.js';

/** The database cannot be used; the message says where hookpost looked and what to do. */
export class DatabaseError extends Error {}

export interface DatabaseHandle {
  url: string;
  embedded: boolean;
  /** Stops the embedded server if this process started it; a no-op otherwise. */
  stop(): Promise<void>;
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` (an embedded PostgreSQL running). */
export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Opens DATABASE_URL, or the embedded database (starting it unless another hookpost process
 * already has). With `mustExist`, an embedded database that was never created is an error
 * instead of a new empty one: an operator command run from the wrong folder says so.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  options: { mustExist?: boolean } = {},
): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, stop: async () => {} };
  const port = config.embeddedPort;
  // `hookpost api` and `hookpost dispatcher` started side by side share one embedded server:
  // the first starts it, the others find it answering and connect.
  if (await portAnswers(port)) {
    log.info({ port }, 'using the embedded PostgreSQL another hookpost process started');
    return {
      url: await embeddedUrl(config.dataDir, port),
      embedded: true,
      stop: async () => {},
    };
  }
  if (options.mustExist && !embeddedClusterExists(config.dataDir)) {
    throw new DatabaseError(
      `no hookpost database found: DATABASE_URL is unset and there is no embedded database in ${config.dataDir}. ` +
        'Run this in the folder where you ran `npm start` / `hookpost start`, or set HOOKPOST_DATA_DIR to its ' +
        '.hookpost folder, or DATABASE_URL to your PostgreSQL (then run `hookpost migrate` once)',
    );
  }
  const started = Date.now();
  const db = await startEmbeddedPostgres({ dataDir: config.dataDir, port });
  log.info({ port, dataDir: config.dataDir, ms: Date.now() - started }, 'embedded PostgreSQL started');
  if (db.passwordMigrated) {
    log.warn(
      { dataDir: config.dataDir },
      'embedded PostgreSQL moved from the old fixed password to a generated one',
    );
  }
  return { url: db.url, embedded: true, stop: db.stop };
}

/**
 * Where a database error happened and what it said, for a one-line message: the variable and
 * the target (never the password, even where the driver's message quotes it).
 */
export function describeDatabaseFailure(
  database: DatabaseHandle,
  error: unknown,
): { where: string; reason: string } {
  const e = error as { code?: string; message?: string };
  let reason = e.message || e.code || String(error);
  const password = parseDatabaseUrl(database.url)?.password ?? '';
  if (password) reason = reason.split(password).join('***');
  const where = database.embedded
    ? `the embedded PostgreSQL (${describeDatabaseUrl(database.url)})`
    : `the database in DATABASE_URL (${describeDatabaseUrl(database.url)})`;
  return { where, reason };
}

/**
 * Checks that the database answers before anything else uses it. postgres.js only says
 * "connect ECONNREFUSED 127.0.0.1:1"; this names the variable and the target, never the password.
 */
export async function verifyConnection(sql: Sql, database: DatabaseHandle): Promise<void> {
  try {
    await sql`select 1`;
  } catch (error) {
    const { where, reason } = describeDatabaseFailure(database, error);
    throw new DatabaseError(`cannot connect to ${where}: ${reason}`);
  }
}
