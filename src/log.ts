/**
 * The process logger. Log lines carry ids, counts, status codes and error classes only: never a
 * payload, a secret, a token or a full URL (a URL can hold credentials in its query).
 *
 * Two forms: JSON lines (the default: what log shippers read) and, for a person at a terminal,
 * one readable line per entry (pino-pretty: ISO time, level, message, fields), written
 * synchronously so that entries land where they happen, never inside the start banner.
 */
import { createRequire } from 'node:module';
import pino from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type Logger = pino.Logger;

// Loaded only for a terminal: JSON logging in production never pays for it.
const require = createRequire(import.meta.url);
type PinoPrettyModule = typeof import('pino-pretty');

const PRETTY: PrettyOptions = {
  translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'",
  ignore: 'pid,hostname,service',
  singleLine: true,
};

/**
 * Readable lines when a person is reading: stdout is a terminal and this is not production
 * (NODE_ENV=production keeps JSON even in a terminal, as an operator attached to a container
 * expects what the log pipeline gets).
 */
export function terminalLogs(config: { production: boolean }, stdout: { isTTY?: boolean } = process.stdout) {
  return stdout.isTTY === true && !config.production;
}

/** A logger at `level`; `readable` picks the terminal form (see terminalLogs). */
export function createLogger(level: string, readable = false): Logger {
  const options = { level, base: { service: 'hookpost' } };
  if (!readable) return pino(options);
  const { build } = require('pino-pretty') as PinoPrettyModule;
  return pino(options, build({ ...PRETTY, sync: true, colorize: true }));
}

/** Formats one JSON log line (a child process's) as the terminal form does; the line itself if it is not JSON. */
export function readableLogLine(line: string, colorize = false): string {
  const { prettyFactory } = require('pino-pretty') as PinoPrettyModule;
  const pretty = prettyFactory({ ...PRETTY, colorize });
  try {
    JSON.parse(line);
  } catch {
    return line;
  }
  return pretty(line).trimEnd();
}

/**
 * The fields an error contributes to a log line: its class, its code (a SQLSTATE or a Node or
 * postgres.js code) and its message. Never the error object itself: postgres.js errors carry the
 * query's parameters, and a PostgreSQL `detail` can quote a row.
 */
export function errorFields(error: unknown): { errorName: string; message: string; code?: string } {
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null;
  const fields: { errorName: string; message: string; code?: string } = {
    errorName: typeof e?.name === 'string' ? e.name : typeof error,
    message: typeof e?.message === 'string' ? e.message : String(error),
  };
  if (typeof e?.code === 'string') fields.code = e.code;
  return fields;
}
