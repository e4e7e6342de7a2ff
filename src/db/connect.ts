/** The postgres.js connection pool, configured the one way hookpost uses it. */
import postgres from 'postgres';

export type Sql = postgres.Sql;

export interface ConnectOptions {
  max?: number;
  /** Relax durability for this pool's transactions (dispatcher bookkeeping; see docs/architecture.md). */
  asyncCommit?: boolean;
  applicationName?: string;
}

/** Opens a pool. Notices are dropped: they are noise such as "relation already exists, skipping". */
export function connect(url: string, options: ConnectOptions = {}): Sql {
  const connection: Record<string, string> = {
    application_name: options.applicationName ?? 'hookpost',
    // Every query here is short OLTP work. With a churning queue table the planner's row
    // estimates swing high, crossed jit_above_cost, and JIT compilation then took ~80 ms of a
    // 10 ms claim. Measured in the drain experiment: docs/architecture.md ("Claiming").
    jit: 'off',
  };
  if (options.asyncCommit) connection.synchronous_commit = 'off';
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection,
    idle_timeout: 60,
    connect_timeout: 10,
  });
}
