/**
 * The dispatcher's two database pools. Both commit asynchronously: losing the last few claims or
 * results in a PostgreSQL crash only means a delivery is sent again with the same webhook-id
 * (at-least-once), and it saves a disk flush per batch (enqueue stays synchronous).
 * - `sql`: completions, hand-backs, maintenance; fixed-shape batch statements, planned once per
 *   connection (generic plans);
 * - `claimSql`: the claim loop, one claim at a time: generic plans too, pinned to index lookups
 *   and nested loops, so that a plan made on a near-empty queue stays right when the queue has
 *   grown (docs/architecture.md, "Generic plans").
 */
import { connect, type Sql } from '../db/connect.js';

/** Connections each pool may open: results and maintenance; claims. */
const RESULTS_POOL_MAX = 8;
const CLAIMS_POOL_MAX = 2;

/**
 * The most connections a dispatcher opens beside its process's main pool: both pools, and the
 * one postgres.js opens for LISTEN (the wake-ups and the endpoint cache share it).
 * docs/deploying.md ("Connections to PostgreSQL") and compose.yaml are sized from it.
 */
export const DISPATCHER_CONNECTIONS = RESULTS_POOL_MAX + CLAIMS_POOL_MAX + 1;

export interface DispatcherPools {
  sql: Sql;
  claimSql: Sql;
}

/**
 * `onConnectionClosed`: any connection of either pool closed (Dispatcher.connectionClosed, which
 * looks for rows a failover stranded).
 */
export function openDispatcherPools(url: string, onConnectionClosed?: () => void): DispatcherPools {
  return {
    sql: connect(url, {
      onClose: onConnectionClosed,
      max: RESULTS_POOL_MAX,
      asyncCommit: true,
      genericPlans: true,
      applicationName: 'hookpost-dispatcher',
    }),
    claimSql: connect(url, {
      onClose: onConnectionClosed,
      max: CLAIMS_POOL_MAX,
      asyncCommit: true,
      genericPlans: true,
      lookupPlans: true,
      applicationName: 'hookpost-dispatcher-claims',
    }),
  };
}

/** Closes both pools, letting running statements finish for up to `timeoutSeconds`. */
export async function closeDispatcherPools(pools: DispatcherPools, timeoutSeconds = 5): Promise<void> {
  await Promise.all([
    pools.sql.end({ timeout: timeoutSeconds }),
    pools.claimSql.end({ timeout: timeoutSeconds }),
  ]);
}
