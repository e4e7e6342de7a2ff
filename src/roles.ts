/**
 * Running hookpost's long-lived roles (API, dispatcher) in this process, and shutting them down
 * in order on SIGINT/SIGTERM: stop accepting, drain, close the pool, stop the embedded database.
 */
import type { Hono } from 'hono';
import { resolveAdminToken } from './admin-token.js';
import { createApp } from './api/app.js';
import { BackgroundTasks } from './api/background.js';
import { serveApp } from './api/serve.js';
import { printBanner } from './banner.js';
import type { Config } from './config.js';
import { connect } from './db/connect.js';
import { openDatabase } from './db/database.js';
import { migrate, readMigrations } from './db/migrate.js';
import { createWaker } from './deliveries/wakeup.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { createSecretBox } from './endpoints/secrets.js';
import { EndpointStore } from './endpoints/store.js';
import { errorFields, type Logger } from './log.js';
import { createMetricsApp } from './metrics/http.js';
import { createMetrics } from './metrics/registry.js';
import { VERSION } from './version.js';

export interface RoleOptions {
  api: boolean;
  dispatcher: boolean;
}

type Closer = () => Promise<void>;

/** Serves `app` on host:port; resolves once listening, with a closer for shutdown. */
async function listen(app: Hono, port: number, host: string): Promise<Closer> {
  const served = await serveApp(app, port, host);
  return () => served.close();
}

/**
 * An error nothing caught leaves the process in an unknown state (postgres.js can throw one from
 * a timer when the server dies mid-write; see patches/): log one fatal line and exit 1, so a
 * supervisor (Docker `restart: unless-stopped`, systemd `Restart=on-failure`) starts a fresh
 * process. Nothing is lost: accepted deliveries are on disk and leases run out.
 */
function exitOnUncaughtErrors(log: Logger): void {
  const die = (kind: string) => (error: unknown) => {
    log.fatal(
      { ...errorFields(error), kind },
      'uncaught error: exiting so that a supervisor restarts the process',
    );
    process.exit(1);
  };
  process.on('uncaughtException', die('uncaughtException'));
  process.on('unhandledRejection', die('unhandledRejection'));
}

export async function runRoles(config: Config, log: Logger, roles: RoleOptions): Promise<number> {
  exitOnUncaughtErrors(log);
  const closers: Closer[] = [];
  const database = await openDatabase(config, log);
  closers.unshift(() => database.stop());
  // A short connect timeout: with the database unreachable, requests answer 503 within 2 s.
  const sql = connect(database.url, { max: 20, applicationName: 'hookpost-api', connectTimeoutSeconds: 1.5 });
  closers.unshift(() => sql.end({ timeout: 5 }));

  const applied = await migrate(sql);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const migrationCount = (await readMigrations()).length;
  const secrets = createSecretBox(config.secretKey);
  if (!config.secretKey) log.warn('HOOKPOST_SECRET_KEY is not set: endpoint secrets are stored unencrypted');
  // One registry for the whole process: with both roles here, one /metrics shows both.
  const metrics = createMetrics({ sql, log, maxAgeMs: config.metricsCacheSeconds * 1000 });

  if (roles.dispatcher) {
    // Dispatcher bookkeeping commits asynchronously: losing the last few claims or results in a
    // PostgreSQL crash only means a delivery is sent again with the same webhook-id
    // (at-least-once), and it saves a disk flush per batch. Enqueue stays synchronous.
    const dispatchSql = connect(database.url, {
      max: 8,
      asyncCommit: true,
      applicationName: 'hookpost-dispatcher',
    });
    const dispatcher = new Dispatcher({
      sql: dispatchSql,
      config,
      log,
      secrets,
      userAgent: `hookpost/${VERSION}`,
      metrics,
    });
    await dispatcher.start();
    closers.unshift(() => dispatchSql.end({ timeout: 5 }));
    closers.unshift(() => dispatcher.stop());
    log.info({ concurrency: config.dispatchConcurrency }, 'dispatcher started');
  }

  if (roles.api) {
    const admin = await resolveAdminToken(config.adminToken, config.dataDir);
    const waker = createWaker(sql);
    closers.unshift(async () => waker.close());
    const background = new BackgroundTasks();
    closers.unshift(() => background.stop()); // after the server stops accepting, before the pool
    const app = createApp({
      sql,
      config,
      log,
      adminToken: admin.token,
      endpoints: new EndpointStore(sql, secrets),
      migrationCount,
      onEnqueued: () => waker.poke(),
      background,
      metrics,
    });
    closers.unshift(await listen(app, config.port, config.host));
    printBanner(config, admin);
  }

  if (config.metricsPort !== undefined) {
    closers.unshift(
      await listen(createMetricsApp(metrics, config.metricsToken, log), config.metricsPort, config.host),
    );
    log.info({ port: config.metricsPort }, 'metrics listener started');
  } else if (!roles.api) {
    log.info('no API in this process: set HOOKPOST_METRICS_PORT to expose its /metrics');
  }

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      let code = 0;
      for (const close of closers) {
        try {
          await close();
        } catch (error) {
          code = 1;
          log.error(errorFields(error), 'shutdown step failed');
        }
      }
      resolve(code);
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}
