/**
 * A stopped hookpost process always exits. Its shutdown closes everything it opened, in order,
 * each step bounded (roles.ts), and the process then ends by itself because nothing is left
 * open. Two ways it could still linger, both caught here with timers that are unref'd, so they
 * never keep a process alive that would otherwise exit:
 *
 * - something left open after the last step (seen once under heavy load: a pool connection to a
 *   newly promoted primary that outlived the pool's end() after a failover) — exit a moment later
 *   and name what was open, instead of lingering until a supervisor's SIGKILL, or forever without
 *   one;
 * - a step that never finishes — exit once the whole shutdown's deadline has passed.
 */
import type { Logger } from './log.js';

/** How long a shut-down process may stay alive before it is made to exit (ms). */
export const LINGER_AFTER_SHUTDOWN_MS = 2000;
/** Time allowed beyond HOOKPOST_SHUTDOWN_TIMEOUT_MS for the steps after the drain (pools, the embedded database). */
export const SHUTDOWN_MARGIN_MS = 30_000;

type Exit = (code: number) => void;

/** Once shutdown is done: exits with `code` if the process is still running `afterMs` later. */
export function exitIfStillRunning(
  code: number,
  log: Logger,
  afterMs = LINGER_AFTER_SHUTDOWN_MS,
  exit: Exit = (c) => process.exit(c),
): void {
  setTimeout(() => {
    log.warn(
      { open: process.getActiveResourcesInfo(), code },
      'still running after shutdown: exiting (something it opened was left open)',
    );
    exit(code);
  }, afterMs).unref();
}

/** When shutdown starts: exits with code 1 if it has not finished within `withinMs`. */
export function exitIfShutdownHangs(
  log: Logger,
  withinMs: number,
  exit: Exit = (c) => process.exit(c),
): void {
  setTimeout(() => {
    log.error(
      { ms: withinMs, open: process.getActiveResourcesInfo() },
      'shutdown did not finish in time: exiting',
    );
    exit(1);
  }, withinMs).unref();
}
