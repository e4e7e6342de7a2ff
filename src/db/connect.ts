/** The postgres.js connection pool, configured the one way hookpost uses it. */
import postgres from 'postgres';
import { parseDatabaseUrl } from './url.js';

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
   * The longest one statement may run, in ms (PostgreSQL statement_timeout, cancelled with
   * SQLSTATE 57014): the API's pool, so that no request holds a connection for long whatever
   * it asks. Work that is long by nature runs on a connection without it (withoutStatementTimeout).
   */
  statementTimeoutMs?: number;
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
  /**
   * Called when one of the pool's connections closes (the server went away, an idle timeout):
   * the dispatcher looks for work stranded by a failover when it reconnects.
   */
  onClose?: () => void;
}

/**
 * What hookpost asks of a session when the URL lists several hosts and says nothing itself: one
 * that can write, as libpq's `target_session_attrs=read-write` (checked against in_hot_standby
 * and default_transaction_read_only, reported at connect by PostgreSQL 14+). Without it the
 * first host that answers would do, a standby listed first included, and every write would fail.
 */
export function sessionAttrsFor(url: string): 'read-write' | undefined {
  const parsed = parseDatabaseUrl(url);
  if (!parsed || parsed.hosts.length < 2 || parsed.params.has('target_session_attrs')) return undefined;
  return 'read-write';
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
  if (options.statementTimeoutMs !== undefined)
    connection.statement_timeout = String(options.statementTimeoutMs);
  if (options.genericPlans) connection.plan_cache_mode = 'force_generic_plan';
  if (options.lookupPlans) {
    connection.enable_seqscan = 'off';
    connection.enable_hashjoin = 'off';
    connection.enable_mergejoin = 'off';
  }
  const targetSessionAttrs = sessionAttrsFor(url);
  return postgres(url, {
    ...(targetSessionAttrs ? { target_session_attrs: targetSessionAttrs } : {}),
    ...(options.onClose ? { onclose: options.onClose } : {}),
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

/**
 * Runs `work` on one connection reserved from `sql`, with no statement_timeout: migrations and
 * CONCURRENTLY index builds on the API's pool, which take as long as the tables are large. The
 * connection goes back to the pool with its own timeout again (RESET restores the value it was
 * opened with), before it serves a request.
 */
export async function withoutStatementTimeout<T>(
  sql: Sql,
  work: (connection: postgres.ReservedSql) => Promise<T>,
): Promise<T> {
  const connection = await sql.reserve();
  try {
    await connection`SET statement_timeout = 0`;
    return await work(connection);
  } finally {
    await connection`RESET statement_timeout`.catch(() => {});
    connection.release();
  }
}

/**
 * A statement cancelled by statement_timeout (57014 query_canceled; hookpost cancels nothing
 * else on the API's pool): the request asked for more than the database gives one statement.
 */
export function isStatementTimeout(error: unknown): boolean {
  return (error as Error | null)?.name === 'PostgresError' && (error as { code?: unknown }).code === '57014';
}

/**
 * A statement that fails with 25006 when the session cannot write (a standby, or a server made
 * read-only), and does nothing otherwise. A check that only reads (pg_is_in_recovery()) leaves a
 * pooled session on a standby in the pool: behind a single-host URL it kept answering "read-only"
 * for up to the idle timeout after a primary was back at the address. Failing with 25006 instead
 * makes the patched postgres.js close that session (patches/), so the next check opens a new one.
 * A DO block runs on a standby; it writes nothing.
 */
export const REFUSE_IF_READ_ONLY = `DO $$ BEGIN
  IF pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' THEN
    RAISE EXCEPTION 'the database is read-only' USING ERRCODE = '25006';
  END IF;
END $$`;

/** Whether `error` is REFUSE_IF_READ_ONLY's (or any statement's) refusal of a read-only session. */
export function isReadOnlyRefusal(error: unknown): boolean {
  return (error as Error | null)?.name === 'PostgresError' && isReadOnlySession(error);
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
  // no host of the URL was what target_session_attrs asks for (only standbys up: no primary)
  'TARGET_SESSION_ATTRS',
]);

/**
 * A session that cannot write: the server is a standby or was made read-only. During a
 * failover this is a primary that is not there yet, so the caller should retry: 25006
 * (read_only_sql_transaction), or its message where a proxy or pooler passes it on differently.
 * The patched postgres.js drops such a connection when it asked for read-write (patches/).
 */
function isReadOnlySession(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e?.code === '25006') return true;
  return typeof e?.message === 'string' && / in a read-only transaction$/.test(e.message);
}

/**
 * Whether `error` means the database is unavailable right now (down, restarting, unreachable,
 * out of connections, no primary), as opposed to a bad query: then the caller should retry
 * later. SQLSTATE class 08 is a connection exception; 57P01–57P03 are shutdown, crash and
 * "starting up"; 53300 is too many connections; 25006 a session that cannot write.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (isReadOnlyRefusal(error)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  if (UNREACHABLE_CODES.has(code)) return true;
  if ((error as Error).name !== 'PostgresError') return false;
  return (
    code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300'
  );
}
