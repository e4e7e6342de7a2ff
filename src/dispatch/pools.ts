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

export interface DispatcherPools {
  sql: Sql;
  claimSql: Sql;
}

export function openDispatcherPools(url: string): DispatcherPools {
  return {
    sql: connect(url, {
      max: 8,
      asyncCommit: true,
      genericPlans: true,
      applicationName: 'hookpost-dispatcher',
    }),
    claimSql: connect(url, {
      max: 2,
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
