/** createApp(deps): the whole HTTP API as a Hono app. It never listens; main.ts does. */
import { Hono } from 'hono';
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { migrationsApplied } from '../db/migrate.js';
import { createBacklogGuard } from '../deliveries/backlog.js';
import { NO_WAKE_UPS, type WakeUps } from '../deliveries/wakeup.js';
import type { EndpointStore } from '../endpoints/store.js';
import type { Logger } from '../log.js';
import { createMetrics, type HookpostMetrics } from '../metrics/registry.js';
import { SchemaCatalog } from '../tenants/event-types.js';
import { mountPages } from '../ui/routes.js';
import { apiKeyRoutes } from './api-keys.js';
import { auditLogRoutes } from './audit-log.js';
import { type ApiEnv, keyAuth } from './auth.js';
import type { BackgroundTasks } from './background.js';
import { deadLetterRoutes } from './dead-letters.js';
import { deliveryRoutes } from './deliveries.js';
import { healthRoutes } from './endpoint-health.js';
import { latencyRoutes } from './endpoint-latency.js';
import { testEventRoutes } from './endpoint-test-event.js';
import { endpointRoutes } from './endpoints.js';
import { createErrorHandler, errorBody, notFoundHandler } from './errors.js';
import { eventTypeRoutes } from './event-types.js';
import { mountMetrics } from './metrics-http.js';
import './openapi/operations.js';
import { messageRoutes } from './messages.js';
import { pipelineRoutes } from './pipeline.js';
import { replayRoutes } from './replay.js';
import { resendRoutes } from './resend.js';
import { tenantRoutes } from './tenants.js';

export interface AppDeps {
  sql: Sql;
  config: Config;
  log: Logger;
  adminToken: string;
  endpoints: EndpointStore;
  migrationCount: number;
  /** Wakes the dispatchers when new deliveries are committed. */
  waker?: WakeUps;
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

  const v1 = new Hono<ApiEnv>();
  // Authentication and the route's scope (route-scopes.ts); the caller's tenant travels from
  // here into every query as its TenantScope.
  v1.use('*', keyAuth({ sql: deps.sql, adminToken: deps.adminToken, log: deps.log }));
  const catalog = new SchemaCatalog(deps.sql);
  // Before the endpoint routes, so that "slow" is not taken for an endpoint id.
  v1.route('/endpoints', healthRoutes({ sql: deps.sql, endpoints: deps.endpoints }));
  v1.route(
    '/endpoints',
    endpointRoutes({
      sql: deps.sql,
      endpoints: deps.endpoints,
      allowPrivateTargets: deps.config.allowPrivateTargets,
      secretGraceSeconds: deps.config.secretGraceSeconds,
      retryPolicy: deps.config.policies.retry,
      requestTimeoutMs: deps.config.requestTimeoutMs,
    }),
  );
  v1.route('/endpoints', latencyRoutes({ sql: deps.sql, endpoints: deps.endpoints }));
  v1.route(
    '/endpoints',
    testEventRoutes({
      sql: deps.sql,
      endpoints: deps.endpoints,
      waker: deps.waker ?? NO_WAKE_UPS,
      metrics,
    }),
  );
  v1.route(
    '/endpoints',
    resendRoutes({
      sql: deps.sql,
      log: deps.log,
      replayBatchSize: deps.config.replayBatchSize,
      replayRatePerSecond: deps.config.replayRatePerSecond,
      background: deps.background,
    }),
  );
  v1.route(
    '/deliveries',
    deliveryRoutes({
      sql: deps.sql,
      maxPayloadBytes: deps.config.maxPayloadBytes,
      maxBatchBytes: deps.config.maxBatchBytes,
      backlogLimit: deps.config.backlogLimit,
      backlog: createBacklogGuard(deps.sql, deps.config.backlogLimit),
      waker: deps.waker ?? NO_WAKE_UPS,
      metrics,
      catalog,
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
  v1.route('/tenants', tenantRoutes({ sql: deps.sql }));
  v1.route('/api-keys', apiKeyRoutes({ sql: deps.sql }));
  v1.route('/audit-log', auditLogRoutes({ sql: deps.sql }));
  v1.route('/event-types', eventTypeRoutes({ sql: deps.sql, catalog }));
  v1.route('/messages', messageRoutes({ sql: deps.sql }));
  app.route('/v1', v1);
  mountPages(app, { portalFrameAncestors: deps.config.portalFrameAncestors });
  return app;
}
