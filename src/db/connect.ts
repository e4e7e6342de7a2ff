/** The postgres.js connection pool, configured the one way hookpost uses it. */
import postgres from 'postgres';

export type Sql = postgres.Sql;
/** Anything a query can run on: the pool or a transaction. Queries take this, so no casts. */
export type Executor = postgres.Sql | postgres.TransactionSql;
/** A composable piece of SQL (postgres.js fragment) built by one executor, nested in another query. */
export type Fragment = postgres.Fragment;

export interface ConnectOptions {
  max?: number;
  /** Relax durability for this pool's transactions (dispatcher bookkeeping; see docs/architecture.md). */
  asyncCommit?: boolean;
  applicationName?: string;
  /**
   * How long opening a connection may take (TCP, TLS, authentication). The API pool keeps it at
   * 1.5 s so that, with the database unreachable or still starting up (a connection accepted but
   * not answered), a request is answered 503 within 2 s instead of ten.
   */
  connectTimeoutSeconds?: number;
  /**
   * Plan each prepared statement once per connection (plan_cache_mode = force_generic_plan)
   * instead of letting PostgreSQL re-plan it per execution: for the dispatcher's fixed-shape
   * batch statements, whose plans do not depend on their parameters (docs/architecture.md,
   * "Generic plans").
   */
  genericPlans?: boolean;
  /**
   * Plans of index lookups and nested loops only (enable_seqscan, enable_hashjoin and
   * enable_mergejoin off): for the claim, whose generic plan is made once with the tables' sizes
   * of that moment. Made on a near-empty queue, it scanned the whole queue in every later claim;
   * pinned to lookups, its cost follows the rows it claims at any size ("Generic plans").
   */
  lookupPlans?: boolean;
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
  if (options.genericPlans) connection.plan_cache_mode = 'force_generic_plan';
  if (options.lookupPlans) {
    connection.enable_seqscan = 'off';
    connection.enable_hashjoin = 'off';
    connection.enable_mergejoin = 'off';
  }
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection,
    idle_timeout: 60,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    // postgres.js waits `backoff(n)` seconds before reconnecting a connection that broke, n
    // counting the pool's failed connects since the last success. Its default grows to 10-20 s
    // after a few failures, which is why the first delivery after a 30 s outage took ~14 s. A
    // ceiling of half a second costs at most two connection attempts per second per pool.
    backoff: (attempt: number) => Math.min(0.5, 0.05 * 2 ** attempt),
  });
}

/** Node socket errors that mean "cannot reach the database server". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // postgres.js's own connection errors
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/**
 * Whether `error` means the database is unavailable right now (down, restarting, unreachable,
 * out of connections), as opposed to a bad query: then the caller should retry later. SQLSTATE
 * class 08 is a connection exception; 57P01–57P03 are shutdown, crash and "starting up";
 * 53300 is too many connections.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  if (UNREACHABLE_CODES.has(code)) return true;
  if ((error as Error).name !== 'PostgresError') return false;
  return (
    code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300'
  );
}
