/**
 * pipelinedTransaction: BEGIN goes out with the first statement (one round trip fewer than
 * postgres.js's sql.begin, counted by a proxy on the wire), and it is still all or nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, type Sql } from '../../src/db/connect.js';
import { pipelinedTransaction } from '../../src/db/transaction.js';
import { type CuttableProxy, startProxy } from '../faults/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from '../helpers.js';

describe('pipelinedTransaction', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let sql: Sql;

  before(async () => {
    db = await createTestDatabase(false);
    await db.sql`CREATE TABLE items (id int PRIMARY KEY)`;
    proxy = await startProxy(Number(new URL(db.url).port));
    sql = connect(proxy.via(db.url), { max: 1 }); // one connection: its round trips are the ones counted
  });
  after(async () => {
    await sql?.end({ timeout: 5 });
    await proxy?.close();
    await db?.drop();
  });

  const turnsOf = async (work: () => Promise<unknown>) => {
    const before = proxy.turns();
    await work();
    return proxy.turns() - before;
  };

  it('sends BEGIN with the first statement: two round trips for one statement, sql.begin takes three', async () => {
    const insert = (tx: Sql, id: number) => tx`INSERT INTO items (id) VALUES (${id})`;
    // Once each first: a statement's first use on a connection also asks for its parameter types.
    await pipelinedTransaction(sql, (tx) => insert(tx, 1));
    await sql.begin((tx) => insert(tx as unknown as Sql, 2));
    assert.equal(await turnsOf(() => pipelinedTransaction(sql, (tx) => insert(tx, 3))), 2);
    assert.equal(await turnsOf(() => sql.begin((tx) => insert(tx as unknown as Sql, 4))), 3, 'the control');
    const rows = await db.sql<{ id: number }[]>`SELECT id FROM items ORDER BY id`;
    assert.deepEqual(
      rows.map((r) => r.id),
      [1, 2, 3, 4],
    );
  });

  it('writes nothing when the callback fails, and leaves the connection outside any transaction', async () => {
    await assert.rejects(
      pipelinedTransaction(sql, async (tx) => {
        await tx`INSERT INTO items (id) VALUES (10)`;
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    await assert.rejects(
      pipelinedTransaction(sql, async (tx) => {
        await tx`INSERT INTO items (id) VALUES (11)`;
        await tx`INSERT INTO items (id) VALUES (11)`; // a duplicate key: the statement fails
      }),
      /duplicate key/,
    );
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id IN (10, 11)`;
    assert.equal(row!.n, 0);
    // A write on the same (only) connection is seen at once from another one: it was not made
    // inside a transaction left open.
    await sql`INSERT INTO items (id) VALUES (12)`;
    const [seen] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id = 12`;
    assert.equal(seen!.n, 1, 'the pooled connection is not left inside a transaction');
  });

  it('commits what the callback wrote, and returns its result', async () => {
    const result = await pipelinedTransaction(sql, async (tx) => {
      await tx`INSERT INTO items (id) VALUES (20)`;
      const [row] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id = 20`;
      return row!.n;
    });
    assert.equal(result, 1);
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id = 20`;
    assert.equal(row!.n, 1);
  });

  it('sends COMMIT with the last statement when asked: one round trip for one statement', async () => {
    const insertAndCommit = (id: number) =>
      pipelinedTransaction(sql, async (tx, commitNow) => {
        const statement = tx`INSERT INTO items (id) VALUES (${id})`.execute();
        commitNow();
        await statement;
      });
    await insertAndCommit(30); // the statement's first use
    assert.equal(await turnsOf(() => insertAndCommit(31)), 1);
    const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id IN (30, 31)`;
    assert.equal(row!.n, 2, 'both committed');
    // The statement fails: the COMMIT behind it rolls back, and the caller sees the failure even
    // when the callback swallows the statement's error.
    await assert.rejects(insertAndCommit(31), /duplicate key/);
    await assert.rejects(
      pipelinedTransaction(sql, async (tx, commitNow) => {
        await tx`INSERT INTO items (id) VALUES (32)`;
        const statement = tx`INSERT INTO items (id) VALUES (31)`.execute();
        commitNow();
        await statement.catch(() => {});
      }),
      /rolled back at its COMMIT/,
    );
    const [kept] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM items WHERE id = 32`;
    assert.equal(kept!.n, 0, 'nothing of the rolled-back transaction was written');
  });
});
