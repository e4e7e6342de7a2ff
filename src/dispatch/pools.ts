/**
 * The dispatcher's two database pools. Both commit asynchronously: losing the last few claims or
 * results in a PostgreSQL crash only means a delivery is sent again with the same webhook-id
 * (at-least-once), and it saves a disk flush per batch (enqueue stays synchronous).
 * - `sql`: completions, hand-backs, maintenance; fixed-shape batch statements, planned once per
 *   connection (generic plans);
 * - `claimSql`: the claim loop, one claim at a time, planned at every execution: the claim's best
 *   plan depends on the queue's size (docs/architecture.md, "Generic plans").
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
      plans: 'generic',
      applicationName: 'hookpost-dispatcher',
    }),
    claimSql: connect(url, {
      max: 2,
      asyncCommit: true,
      plans: 'custom',
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
