/** Picks the database: DATABASE_URL when set, else the embedded PostgreSQL under the data dir. */
import net from 'node:net';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { embeddedUrl, startEmbeddedPostgres } from './embedded.js';

export interface DatabaseHandle {
  url: string;
  embedded: boolean;
  /** Stops the embedded server if this process started it; a no-op otherwise. */
  stop(): Promise<void>;
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function openDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
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
