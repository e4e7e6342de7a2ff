/**
 * Which scope each /v1 route needs: the one table the auth middleware checks (src/api/auth.ts).
 * A route without a row here answers 404, and test/tenants/scope-matrix.test.ts walks the app's
 * routes and fails for any route missing from this table, so a new route cannot ship open.
 */
import type { Scope } from '../tenants/scope.js';

/** A route any valid key may call, whatever its scopes (GET /v1/whoami: the key itself). */
export const ANY_KEY = 'any key';

export type RouteRule = readonly [method: string, path: string, scope: Scope | typeof ANY_KEY];

export const ROUTE_SCOPES: readonly RouteRule[] = [
  ['POST', '/v1/endpoints', 'endpoints:write'],
  ['GET', '/v1/endpoints', 'endpoints:read'],
  ['GET', '/v1/endpoints/slow', 'endpoints:read'],
  ['GET', '/v1/endpoints/:id/health', 'endpoints:read'],
  ['GET', '/v1/endpoints/:id/latency', 'endpoints:read'],
  ['GET', '/v1/endpoints/:id', 'endpoints:read'],
  ['PATCH', '/v1/endpoints/:id', 'endpoints:write'],
  ['DELETE', '/v1/endpoints/:id', 'endpoints:write'],
  ['POST', '/v1/endpoints/:id/rotate-secret', 'endpoints:write'],
  // "Retry now": sends what waits behind the circuit; endpoint management, like enable.
  ['POST', '/v1/endpoints/:id/close-circuit', 'endpoints:write'],
  // A fixed payload to one endpoint (the portal's test button): endpoint management, not enqueue.
  ['POST', '/v1/endpoints/:id/test-event', 'endpoints:write'],
  // A resend is a replay of delivered events too: same scope, same audit.
  ['POST', '/v1/endpoints/:id/resend', 'replay'],
  // Evaluates a filter on a payload the caller sends; stores and reads nothing.
  ['POST', '/v1/filters/test', 'endpoints:read'],
  ['POST', '/v1/deliveries', 'deliveries:write'],
  ['POST', '/v1/deliveries/batch', 'deliveries:write'],
  ['GET', '/v1/deliveries', 'deliveries:read'],
  ['GET', '/v1/deliveries/:id', 'deliveries:read'],
  ['POST', '/v1/deliveries/:id/replay', 'replay'],
  ['GET', '/v1/dead-letters/analysis', 'deliveries:read'],
  ['POST', '/v1/dead-letters/replay', 'replay'],
  ['GET', '/v1/dead-letters/replays/:id', 'deliveries:read'],
  ['GET', '/v1/pipeline', 'deliveries:read'],
  // The events log: whoever may read a tenant's deliveries may read the events behind them.
  ['GET', '/v1/messages', 'deliveries:read'],
  // An erasure request: whoever may write a tenant's events may erase them (audited).
  ['POST', '/v1/messages/:id/expunge', 'deliveries:write'],
  ['GET', '/v1/event-types', 'endpoints:read'],
  ['GET', '/v1/event-types/:name', 'endpoints:read'],
  ['PUT', '/v1/event-types/:name', 'admin'],
  ['DELETE', '/v1/event-types/:name', 'admin'],
  ['GET', '/v1/tenants', 'admin'],
  ['PUT', '/v1/tenants/:id', 'admin'],
  ['GET', '/v1/tenants/:id', 'admin'],
  ['DELETE', '/v1/tenants/:id', 'admin'],
  ['POST', '/v1/tenants/:id/portal-sessions', 'admin'],
  ['POST', '/v1/api-keys', 'admin'],
  ['GET', '/v1/api-keys', 'admin'],
  ['DELETE', '/v1/api-keys/:id', 'admin'],
  ['GET', '/v1/audit-log', 'admin'],
  ['GET', '/v1/whoami', ANY_KEY],
];

const compiled = ROUTE_SCOPES.map(([method, path, scope]) => ({
  method,
  scope,
  pattern: new RegExp(`^${path.replace(/:[a-z_]+/g, '[^/]+')}/?$`),
}));

/** The scope a request needs, or undefined when no /v1 route has that method and path. */
export function requiredScope(method: string, path: string): Scope | typeof ANY_KEY | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return compiled.find((r) => r.method === m && r.pattern.test(path))?.scope;
}
