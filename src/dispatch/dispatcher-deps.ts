/** What a Dispatcher is made of, and the HTTP sender its configuration asks for. */
import type { Config } from '../config.js';
import type { Sql } from '../db/connect.js';
import type { DatabaseOutages } from '../db/outage.js';
import type { SecretBox } from '../endpoints/secrets.js';
import type { Logger } from '../log.js';
import type { HookpostMetrics } from '../metrics/registry.js';
import type { Tracing } from '../tracing/tracing.js';
import { Sender } from './sender.js';

export interface DispatcherDeps {
  sql: Sql;
  /**
   * The pool claims run on (default: `sql`): in production one whose plans are pinned to index
   * and TID lookups (dispatch/pools.ts), because the claim's best plan depends on the queue's size.
   */
  claimSql?: Sql;
  config: Config;
  log: Logger;
  secrets: SecretBox;
  userAgent: string;
  metrics?: HookpostMetrics;
  /** Logs database outages once each; shared with the API in `hookpost start` (roles.ts). */
  outages?: DatabaseOutages;
  /** OpenTelemetry traces: a span per attempt; undefined when off. */
  tracing?: Tracing | undefined;
}

/** The dispatcher's Sender: timeouts, snippets, DNS, egress proxy and timing from its config. */
export function dispatcherSender(deps: DispatcherDeps): Sender {
  const { config } = deps;
  return new Sender({
    timeoutMs: config.requestTimeoutMs,
    snippetBytes: config.responseSnippetBytes,
    allowPrivateTargets: config.allowPrivateTargets,
    connectionsPerOrigin: config.dispatchConcurrency,
    userAgent: deps.userAgent,
    dnsServers: config.dnsServers,
    dnsMaxTtlSeconds: config.dnsMaxTtlSeconds,
    egressProxy: config.egressProxy,
    timed: deps.tracing !== undefined,
  });
}
