/**
 * Whether a payload may cross the wire as text instead of bytea (docs/performance.md): postgres.js
 * sends and receives bytea as hex, twice the bytes, encoded and decoded in JavaScript. Text is the
 * same bytes only when the server stores UTF-8 (`server_encoding`, fixed per database) and the
 * session speaks it (`client_encoding`, which postgres.js always sets to UTF8).
 */
import type { Sql } from './connect.js';

/**
 * True once the server has reported `server_encoding = UTF8`: PostgreSQL sends it when a
 * connection starts (a GUC_REPORT parameter), and postgres.js keeps it in `sql.parameters`. False
 * before the pool's first connection: the caller then uses bytea, which is always correct.
 */
export function utf8Server(sql: Sql): boolean {
  return sql.parameters.server_encoding === 'UTF8';
}
