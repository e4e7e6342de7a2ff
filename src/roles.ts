/**
 * Running hookpost's long-lived roles (API, dispatcher) in this process, and shutting them down
 * in order on SIGINT/SIGTERM: stop accepting, drain, close the pool, stop the embedded database.
 */
import type { Hono } from 'hono';
import { type AdminToken, resolveAdminToken } from './admin-token.js';
import { createApp } from './api/app.js';
import { BackgroundTasks } from './api/background.js';
import { createMetricsApp } from './api/metrics-http.js';
import { describeListenError, ListenError, serveApp } from './api/serve.js';
import { printBanner } from './banner.js';
import type { Config } from './config.js';
import { connect } from './db/connect.js';
import { openDatabase, verifyConnection } from './db/database.js';
import { migrate, readMigrations } from './db/migrate.js';
import { ensureMessageLogIndex } from './deliveries/message-log.js';
import { createWaker } from './deliveries/wakeup.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { closeDispatcherPools, openDispatcherPools } from './dispatch/pools.js';
import { startResealing } from './endpoints/reseal.js';
import { createSecretBox } from './endpoints/secrets.js';
import { EndpointStore } from './endpoints/store.js';
import { errorFields, type Logger } from './log.js';
import { createMetrics } from './metrics/registry.js';
import { VERSION } from './version.js';

export interface RoleOptions {
  api: boolean;
  dispatcher: boolean;
}

type Closer = () => Promise<void>;

/**
 * Serves `app` on host:port; resolves once listening, with a closer for shutdown. When the port
 * cannot be bound, closes what was opened so far and throws a ListenError naming the setting:
 * the process must stop rather than carry on without its API.
 */
async function listen(
  app: Hono,
  port: number,
  host: string,
  portVariable: string,
  opened: Closer[],
): Promise<Closer> {
  try {
    const served = await serveApp(app, port, host);
    return () => served.close();
  } catch (error) {
    for (const close of opened) await close().catch(() => {});
    throw new ListenError(describeListenError(error, host, port, portVariable));
  }
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
  await verifyConnection(sql, database).catch(async (error) => {
    for (const close of closers) await close().catch(() => {});
    throw error;
  });

  const applied = await migrate(sql);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const migrationCount = (await readMigrations()).length;
  const secrets = createSecretBox(config.secretKey, config.secretKeyPrevious);
  if (!config.secretKey) log.warn('HOOKPOST_SECRET_KEY is not set: endpoint secrets are stored unencrypted');
  // Secrets sealed under an older key or stored before a key was set move to the current key.
  const resealing = startResealing(sql, secrets, log);
  closers.unshift(() => resealing.stop());
  // One registry for the whole process: with both roles here, one /metrics shows both.
  const metrics = createMetrics({ sql, log, maxAgeMs: config.metricsCacheSeconds * 1000 });

  let banner: AdminToken | undefined;
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
      waker,
      background,
      metrics,
    });
    closers.unshift(await listen(app, config.port, config.host, 'PORT', closers));
    banner = admin;
    // The events log's index, built CONCURRENTLY in the background (enqueue goes on meanwhile;
    // the log works without it, only slower). A build cut short by a shutdown is redone next start.
    ensureMessageLogIndex(sql).catch((error: unknown) =>
      log.warn(errorFields(error), 'events log index not built; retried at next start'),
    );
  }

  if (config.metricsPort !== undefined) {
    closers.unshift(
      await listen(
        createMetricsApp(metrics, config.metricsToken, log),
        config.metricsPort,
        config.host,
        'HOOKPOST_METRICS_PORT',
        closers,
      ),
    );
    log.info({ port: config.metricsPort }, 'metrics listener started');
  } else if (!roles.api) {
    log.info('no API in this process: set HOOKPOST_METRICS_PORT to expose its /metrics');
  }

  // Only once the listeners are open: a process that cannot serve its API exits instead of
  // carrying on as a headless dispatcher.
  if (roles.dispatcher) {
    const pools = openDispatcherPools(database.url);
    const dispatcher = new Dispatcher({
      ...pools,
      config,
      log,
      secrets,
      userAgent: `hookpost/${VERSION}`,
      metrics,
    });
    await dispatcher.start();
    closers.unshift(() => closeDispatcherPools(pools));
    closers.unshift(() => dispatcher.stop());
    log.info({ concurrency: config.dispatchConcurrency }, 'dispatcher started');
  }

  if (banner) printBanner(config, banner);

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
