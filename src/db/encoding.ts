/**
 * Whether a payload may cross the wire as text instead of bytea (docs/performance.md): postgres.js
 * sends and receives bytea as hex, twice the bytes, encoded and decoded in JavaScript. Text is the
 * same bytes only when the server stores UTF-8 (`server_encoding`, fixed per database) and the
 * session speaks it (`client_encoding`, which postgres.js always sets to UTF8).
 */
import type postgres from 'postgres';
import type { Executor } from './connect.js';

/**
 * True once the server has reported `server_encoding = UTF8`: PostgreSQL sends it when a
 * connection starts (a GUC_REPORT parameter), and postgres.js keeps it in `sql.parameters`. False
 * before the pool's first connection, and inside a transaction or on a reserved connection (they
 * carry no parameters): the caller then uses bytea, which is always correct.
 */
export function utf8Server(sql: Executor): boolean {
  return (sql as Partial<Pick<postgres.Sql, 'parameters'>>).parameters?.server_encoding === 'UTF8';
}
