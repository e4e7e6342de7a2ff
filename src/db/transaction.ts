/**
 * A transaction whose BEGIN travels with its first statement. postgres.js's `sql.begin` waits
 * for BEGIN's answer before running the callback: a round trip of its own, and at low request
 * rates each round trip (a wake-up of the client and of the server backend) costs more CPU than
 * the statement it carries (docs/performance.md, "Round trips at low rates"). Here BEGIN is sent
 * and the callback's first statement is pipelined right behind it on the same connection.
 *
 * Why pipelining BEGIN is safe: the server runs the connection's messages in order, so every
 * statement after it is inside the transaction. BEGIN without options cannot fail on a live
 * connection; on a broken one everything after it fails too. Its answer is still checked before
 * COMMIT, so a BEGIN that somehow failed never ends in a commit.
 *
 * The callback may also send COMMIT early, right behind its last statement (`commitNow`), when
 * nothing it does after that statement could want a rollback: one more round trip saved. Should
 * that statement fail, the server ends the aborted transaction at the COMMIT with a rollback.
 */
import type postgres from 'postgres';
import type { Sql } from './connect.js';

export type PipelinedTransaction = postgres.ReservedSql;

export async function pipelinedTransaction<T>(
  sql: Sql,
  fn: (tx: PipelinedTransaction, commitNow: () => void) => Promise<T>,
): Promise<T> {
  const tx = await sql.reserve();
  try {
    const begun = tx`BEGIN`.execute();
    // Awaited before COMMIT; until then a failure must not surface as an unhandled rejection.
    begun.catch(() => {});
    let committed: Promise<unknown> | undefined;
    const commitNow = () => {
      committed ??= tx`COMMIT`.execute();
      committed.catch(() => {}); // awaited below
    };
    let result: T;
    try {
      result = await fn(tx, commitNow);
      await begun;
      // An early COMMIT after a failed statement answers ROLLBACK: never report that as written.
      if (committed && ((await committed) as { command?: string }).command !== 'COMMIT')
        throw new Error('the transaction was rolled back at its COMMIT');
    } catch (error) {
      // After a failed statement the transaction is aborted; ROLLBACK ends it (and, on a broken
      // connection, fails too: the pool replaces the connection). An early COMMIT has ended it
      // already, either way.
      if (committed) await committed.catch(() => {});
      else await tx`ROLLBACK`.catch(() => {});
      throw error;
    }
    // A failing COMMIT ends the transaction as well (rolled back), so nothing is left open.
    if (!committed) await tx`COMMIT`;
    return result;
  } finally {
    tx.release();
  }
}
