/**
 * The process logger. Log lines carry ids, counts, status codes and error classes only: never a
 * payload, a secret, a token or a full URL (a URL can hold credentials in its query).
 */
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'hookpost' } });
}
