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
import { connect, isDatabaseUnavailable } from './db/connect.js';
import {
  DatabaseError,
  type DatabaseHandle,
  describeDatabaseFailure,
  openDatabase,
  verifyConnection,
} from './db/database.js';
import { migrate, readMigrations } from './db/migrate.js';
import { DatabaseOutages } from './db/outage.js';
import { ensureMessageIndexes } from './deliveries/message-indexes.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { closeDispatcherPools, openDispatcherPools } from './dispatch/pools.js';
import { startResealing } from './endpoints/reseal.js';
import { createSecretBox } from './endpoints/secrets.js';
import { EndpointStore } from './endpoints/store.js';
import { exitIfShutdownHangs, exitIfStillRunning, SHUTDOWN_MARGIN_MS } from './exit-guard.js';
import { errorFields, type Logger } from './log.js';
import { createMetrics } from './metrics/registry.js';
import { createWaker } from './queue/wakeup.js';
import { startTracing } from './tracing/tracing.js';
import { VERSION } from './version.js';

/**
 * Connections the process's main pool may open (requests, migrations, metrics gauges, and a
 * dispatcher's maintenance reads): docs/deploying.md and compose.yaml are sized from it.
 */
export const MAIN_POOL_MAX = 20;

export interface RoleOptions {
  api: boolean;
  dispatcher: boolean;
}

type Closer = () => Promise<void>;

/**
 * Serves `app` on host:port; resolves once listening, with a closer for shutdown. When the port
 * cannot be bound, throws a ListenError naming the setting: the process must stop rather than
 * carry on without its API.
 */
async function listen(app: Hono, port: number, host: string, portVariable: string): Promise<Closer> {
  try {
    const served = await serveApp(app, port, host);
    return () => served.close();
  } catch (error) {
    throw new ListenError(describeListenError(error, host, port, portVariable));
  }
}

/** Runs each closer in order (the newest first), whatever the others do; true if all succeeded. */
async function closeAll(closers: Closer[], log: Logger): Promise<boolean> {
  let ok = true;
  for (const close of closers) {
    try {
      await close();
    } catch (error) {
      ok = false;
      log.error(errorFields(error), 'shutdown step failed');
    }
  }
  return ok;
}

/**
 * A database that refuses at start (no primary, read-only, gone mid-migration) is a
 * DatabaseError: one line naming where hookpost looked, and exit code 1 for the supervisor.
 */
function startupError(error: unknown, database: DatabaseHandle | undefined): unknown {
  if (!database || error instanceof DatabaseError || !isDatabaseUnavailable(error)) return error;
  const { where, reason } = describeDatabaseFailure(database, error);
  const readOnly = (error as { code?: string }).code === '25006' || /read-only/.test(reason);
  return new DatabaseError(
    `cannot start: ${where} became unavailable: ${reason}` +
      (readOnly
        ? ' (a standby or a read-only server: point DATABASE_URL at the primary, or list every ' +
          'host, host1:port1,host2:port2, so that hookpost finds the writable one)'
        : ''),
  );
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
  const opened: { database?: DatabaseHandle } = {};
  let showBanner: () => void;
  try {
    showBanner = await startRoles(config, log, roles, closers, opened);
  } catch (error) {
    // Whatever failed, close what was opened (pools, listeners, the embedded server), so the
    // process exits now instead of lingering on its idle connections for a minute.
    await closeAll(closers, log);
    throw startupError(error, opened.database);
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      exitIfShutdownHangs(log, config.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS);
      const code = (await closeAll(closers, log)) ? 0 : 1;
      exitIfStillRunning(code, log);
      resolve(code);
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
    // Only now: a Ctrl-C sent the moment the banner shows must find the handlers in place (a
    // signal landing between the banner and these lines killed the process unstopped, exit 130).
    showBanner();
  });
}

/**
 * Opens the database and starts the roles, adding a closer for each thing it opens; returns what
 * prints the start banner, for the caller to call once it handles SIGINT/SIGTERM.
 */
async function startRoles(
  config: Config,
  log: Logger,
  roles: RoleOptions,
  closers: Closer[],
  opened: { database?: DatabaseHandle },
): Promise<() => void> {
  // First, so that its closer runs last: the spans of the final attempts are exported too.
  const tracing = await startTracing(config.tracing);
  if (tracing) {
    closers.unshift(() => tracing.shutdown());
    log.info({ protocol: config.tracing!.protocol }, 'tracing on: exporting spans over OTLP/HTTP');
  }
  const database = await openDatabase(config, log);
  opened.database = database;
  closers.unshift(() => database.stop());
  // A short connect timeout: with the database unreachable, requests answer 503 within 2 s. With
  // the API here, every statement is bounded too, so that no request holds a connection for long
  // (answered 503 database_busy); migrations and index builds lift the bound for themselves.
  const sql = connect(database.url, {
    max: MAIN_POOL_MAX,
    applicationName: 'hookpost-api',
    connectTimeoutSeconds: 1.5,
    ...(roles.api ? { statementTimeoutMs: config.apiStatementTimeoutMs } : {}),
  });
  closers.unshift(() => sql.end({ timeout: 5 }));
  // Outages are logged once each for the whole process (API and dispatcher).
  const outages = new DatabaseOutages(sql, log);
  closers.unshift(async () => outages.stop());
  await verifyConnection(sql, database);

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
      outages,
      tracing,
    });
    closers.unshift(await listen(app, config.port, config.host, 'PORT'));
    banner = admin;
    // The messages' tenant indexes (events log, deliveries list), built CONCURRENTLY in the
    // background (enqueue goes on meanwhile; both reads work without them, only slower). A build
    // cut short by a shutdown is redone next start.
    ensureMessageIndexes(sql).catch((error: unknown) =>
      log.warn(errorFields(error), 'tenant indexes of messages not built; retried at next start'),
    );
  }

  if (config.metricsPort !== undefined) {
    closers.unshift(
      await listen(
        createMetricsApp(metrics, config.metricsToken, log),
        config.metricsPort,
        config.host,
        'HOOKPOST_METRICS_PORT',
      ),
    );
    log.info({ port: config.metricsPort }, 'metrics listener started');
  } else if (!roles.api) {
    log.info('no API in this process: set HOOKPOST_METRICS_PORT to expose its /metrics');
  }

  // Only once the listeners are open: a process that cannot serve its API exits instead of
  // carrying on as a headless dispatcher.
  if (roles.dispatcher) {
    let dispatcher: Dispatcher | undefined;
    // A connection that closes (a failover) makes the dispatcher look for rows stranded by it.
    const pools = openDispatcherPools(database.url, () => dispatcher?.connectionClosed());
    closers.unshift(() => closeDispatcherPools(pools));
    dispatcher = new Dispatcher({
      ...pools,
      config,
      log,
      secrets,
      userAgent: `hookpost/${VERSION}`,
      metrics,
      outages,
      tracing,
    });
    const started = dispatcher;
    closers.unshift(() => started.stop());
    await dispatcher.start();
    log.info({ concurrency: config.dispatchConcurrency }, 'dispatcher started');
  }

  return () => {
    if (banner) printBanner(config, banner);
  };
}
