/** createApp(deps): the whole HTTP API as a Hono app. It never listens; main.ts does. */
import { Hono } from 'hono';
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import { readiness } from '../db/migrate.js';
import type { DatabaseOutages } from '../db/outage.js';
import { createBacklogGuard } from '../deliveries/backlog.js';
import { pacedRunLimit } from '../deliveries/paced-run-limit.js';
import type { EndpointStore } from '../endpoints/store.js';
import type { Logger } from '../log.js';
import { createMetrics, type HookpostMetrics } from '../metrics/registry.js';
import { NO_WAKE_UPS, type WakeUps } from '../queue/wakeup.js';
import { SchemaCatalog } from '../tenants/event-types.js';
import type { Tracing } from '../tracing/tracing.js';
import { mountPages } from '../ui/routes.js';
import { createAdmission } from './admission.js';
import { apiKeyRoutes } from './api-keys.js';
import { auditLogRoutes } from './audit-log.js';
import { type ApiEnv, keyAuth } from './auth.js';
import type { BackgroundTasks } from './background.js';
import { deadLetterRoutes } from './dead-letters.js';
import { deliveryRoutes } from './deliveries.js';
import { circuitRoutes } from './endpoint-circuit.js';
import { healthRoutes } from './endpoint-health.js';
import { latencyRoutes } from './endpoint-latency.js';
import { testEventRoutes } from './endpoint-test-event.js';
import { endpointRoutes } from './endpoints.js';
import { createErrorHandler, errorBody, notFoundHandler } from './errors.js';
import { eventTypeRoutes } from './event-types.js';
import { filterRoutes } from './filters.js';
import { mountMetrics } from './metrics-http.js';
import './openapi/operations.js';
import { messageRoutes } from './messages.js';
import { pipelineRoutes } from './pipeline.js';
import { replayRoutes } from './replay.js';
import { resendRoutes } from './resend.js';
import { tenantRoutes } from './tenants.js';
import { traceRequests } from './tracing.js';
import { whoamiRoutes } from './whoami.js';

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
  /** Logs database outages once each (roles.ts shares one with the dispatcher). */
  outages?: DatabaseOutages;
  /** OpenTelemetry traces; undefined when off (then no request pays anything for them). */
  tracing?: Tracing | undefined;
}

export function createApp(deps: AppDeps) {
  const app = new Hono();
  app.onError(createErrorHandler(deps.log, deps.outages));
  app.notFound(notFoundHandler);
  const metrics =
    deps.metrics ??
    createMetrics({ sql: deps.sql, log: deps.log, maxAgeMs: deps.config.metricsCacheSeconds * 1000 });
  mountMetrics(app, metrics, deps.config.metricsToken);

  // The banner prints the base URL; a browser opened there lands on the admin page.
  app.get('/', (c) => c.redirect('/ui', 302));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const state = await readiness(deps.sql, deps.migrationCount);
    if (state === 'ready') return c.json({ status: 'ready' });
    return c.json(
      errorBody(
        'not_ready',
        state === 'read_only'
          ? 'database is read-only (a standby, or a server made read-only): writes would be refused'
          : 'database unreachable or migrations not applied',
      ),
      503,
    );
  });

  const v1 = new Hono<ApiEnv>();
  // Authentication and the route's scope (route-scopes.ts); the caller's tenant travels from
  // here into every query as its TenantScope.
  v1.use('*', keyAuth({ sql: deps.sql, adminToken: deps.adminToken, log: deps.log }));
  // SERVER spans for the requests that start traced work (api/tracing.ts), after authentication:
  // an anonymous client cannot make spans.
  if (deps.tracing) {
    for (const route of [
      '/deliveries',
      '/deliveries/batch',
      '/deliveries/:id/replay',
      '/dead-letters/replay',
      '/endpoints/:id/resend',
    ])
      v1.use(route, traceRequests(deps.tracing, `/v1${route}`));
  }
  const catalog = new SchemaCatalog(deps.sql);
  const runLimit = pacedRunLimit({ ...deps.config, ...deps.config.tenantLimits });
  const admission = createAdmission({
    sql: deps.sql,
    backlogLimit: deps.config.backlogLimit,
    backlog: createBacklogGuard(deps.sql, deps.config.backlogLimit),
  });
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
      maxEndpointsPerTenant: deps.config.tenantLimits.maxEndpointsPerTenant,
    }),
  );
  v1.route('/endpoints', latencyRoutes({ sql: deps.sql, endpoints: deps.endpoints }));
  v1.route('/endpoints', circuitRoutes({ sql: deps.sql, endpoints: deps.endpoints }));
  v1.route(
    '/endpoints',
    testEventRoutes({
      sql: deps.sql,
      endpoints: deps.endpoints,
      waker: deps.waker ?? NO_WAKE_UPS,
      metrics,
      admission,
    }),
  );
  v1.route(
    '/endpoints',
    resendRoutes({
      sql: deps.sql,
      log: deps.log,
      replayBatchSize: deps.config.replayBatchSize,
      replayRatePerSecond: deps.config.replayRatePerSecond,
      runLimit,
      background: deps.background,
    }),
  );
  v1.route(
    '/deliveries',
    deliveryRoutes({
      sql: deps.sql,
      maxPayloadBytes: deps.config.maxPayloadBytes,
      maxBatchBytes: deps.config.maxBatchBytes,
      admission,
      waker: deps.waker ?? NO_WAKE_UPS,
      metrics,
      catalog,
      log: deps.log,
    }),
  );
  v1.route('/deliveries', replayRoutes({ sql: deps.sql }));
  v1.route('/filters', filterRoutes({ sql: deps.sql, maxPayloadBytes: deps.config.maxPayloadBytes }));
  v1.route(
    '/dead-letters',
    deadLetterRoutes({
      sql: deps.sql,
      log: deps.log,
      replayBatchSize: deps.config.replayBatchSize,
      replayRatePerSecond: deps.config.replayRatePerSecond,
      patternThresholds: deps.config.deadLetterPatterns,
      runLimit,
      background: deps.background,
    }),
  );
  v1.route('/pipeline', pipelineRoutes(deps.sql));
  v1.route('/tenants', tenantRoutes({ sql: deps.sql }));
  v1.route('/api-keys', apiKeyRoutes({ sql: deps.sql }));
  v1.route('/audit-log', auditLogRoutes({ sql: deps.sql }));
  v1.route('/event-types', eventTypeRoutes({ sql: deps.sql, catalog }));
  v1.route('/messages', messageRoutes({ sql: deps.sql }));
  v1.route('/whoami', whoamiRoutes());
  app.route('/v1', v1);
  mountPages(app, { portalFrameAncestors: deps.config.portalFrameAncestors });
  return app;
}
