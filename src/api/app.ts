/** createApp(deps): the whole HTTP API as a Hono app. It never listens; main.ts does. */
import { Hono } from 'hono';
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { migrationsApplied } from '../db/migrate.js';
import { createBacklogGuard } from '../deliveries/backlog.js';
import type { EndpointStore } from '../endpoints/store.js';
import type { Logger } from '../log.js';
import { mountMetrics } from '../metrics/http.js';
import { createMetrics, type HookpostMetrics } from '../metrics/registry.js';
import { bearerAuth } from './auth.js';
import type { BackgroundTasks } from './background.js';
import { deadLetterRoutes } from './dead-letters.js';
import { deliveryRoutes } from './deliveries.js';
import { endpointRoutes } from './endpoints.js';
import { createErrorHandler, errorBody, notFoundHandler } from './errors.js';
import { messageRoutes } from './messages.js';
import { pipelineRoutes } from './pipeline.js';
import { replayRoutes } from './replay.js';

export interface AppDeps {
  sql: Sql;
  config: Config;
  log: Logger;
  adminToken: string;
  endpoints: EndpointStore;
  migrationCount: number;
  /** Called after new deliveries are committed, to wake dispatchers. */
  onEnqueued?: () => void;
  /** Where long-running work started by a request (bulk replay) is tracked for shutdown. */
  background?: BackgroundTasks;
  /**
   * The process's metrics, shared with a dispatcher running in the same process so one
   * /metrics shows both; a fresh registry with the database gauges when omitted.
   */
  metrics?: HookpostMetrics;
}

export function createApp(deps: AppDeps) {
  const app = new Hono();
  app.onError(createErrorHandler(deps.log));
  app.notFound(notFoundHandler);
  const metrics =
    deps.metrics ??
    createMetrics({ sql: deps.sql, log: deps.log, maxAgeMs: deps.config.metricsCacheSeconds * 1000 });
  mountMetrics(app, metrics, deps.config.metricsToken);

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const ready = await migrationsApplied(deps.sql, deps.migrationCount).catch(() => false);
    return ready
      ? c.json({ status: 'ready' })
      : c.json(errorBody('not_ready', 'database unreachable or migrations not applied'), 503);
  });

  const v1 = new Hono();
  v1.use('*', bearerAuth(deps.adminToken));
  v1.route(
    '/endpoints',
    endpointRoutes({
      sql: deps.sql,
      endpoints: deps.endpoints,
      allowPrivateTargets: deps.config.allowPrivateTargets,
      secretGraceSeconds: deps.config.secretGraceSeconds,
    }),
  );
  v1.route(
    '/deliveries',
    deliveryRoutes({
      sql: deps.sql,
      maxPayloadBytes: deps.config.maxPayloadBytes,
      maxBatchBytes: deps.config.maxBatchBytes,
      backlogLimit: deps.config.backlogLimit,
      backlog: createBacklogGuard(deps.sql),
      onEnqueued: deps.onEnqueued ?? (() => {}),
      metrics,
    }),
  );
  v1.route('/deliveries', replayRoutes({ sql: deps.sql }));
  v1.route(
    '/dead-letters',
    deadLetterRoutes({
      sql: deps.sql,
      log: deps.log,
      replayBatchSize: deps.config.replayBatchSize,
      replayRatePerSecond: deps.config.replayRatePerSecond,
      patternThresholds: deps.config.deadLetterPatterns,
      background: deps.background,
    }),
  );
  v1.route('/pipeline', pipelineRoutes(deps.sql));
  v1.route('/messages', messageRoutes({ sql: deps.sql }));
  app.route('/v1', v1);
  return app;
}
