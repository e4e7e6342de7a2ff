/**
 * One log line when the database becomes unavailable and one when it is back, per process and
 * per outage, however many requests, claims and result writes fail meanwhile. During a failover
 * every connection attempt fails for seconds; a line per attempt (or per request answered 503)
 * buried what mattered: that there is no primary, why (each host's reason, from postgres.js),
 * since when, and when it ended.
 */
import { errorFields, type Logger } from '../log.js';
import { isDatabaseUnavailable, REFUSE_IF_READ_ONLY, type Sql } from './connect.js';

/** How often an outage's end is looked for (one short query, on the process's pool). */
const PROBE_INTERVAL_MS = 500;

export class DatabaseOutages {
  private current: { since: number; failures: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether an outage is under way (as far as this process has seen). */
  get active(): boolean {
    return this.current !== undefined;
  }

  /**
   * Something failed because the database is unavailable (isDatabaseUnavailable): the first
   * failure of an outage is logged with its reason, the others only counted.
   */
  failed(error: unknown, where: string): void {
    if (this.current) {
      this.current.failures++;
      return;
    }
    this.current = { since: this.clock(), failures: 1 };
    this.log.error(
      { ...errorFields(error), where },
      'database unavailable: API requests that need it are answered 503, dispatch waits; ' +
        'logged again when it is back',
    );
    this.scheduleProbe();
  }

  /**
   * failed() for an error that means the database is unavailable, returning true (the caller
   * logs nothing of its own); false, recording nothing, for any other error.
   */
  absorb(error: unknown, where: string): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    this.failed(error, where);
    return true;
  }

  /** Stops looking for the end of an outage (shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private scheduleProbe(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.probe(), PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  /** Back means writable: a standby or a read-only server answers, but enqueue would still fail. */
  private async probe(): Promise<void> {
    try {
      await this.sql.unsafe(REFUSE_IF_READ_ONLY);
    } catch {
      this.scheduleProbe();
      return;
    }
    const outage = this.current;
    this.current = undefined;
    if (!outage) return;
    this.log.info(
      { unavailableMs: this.clock() - outage.since, failures: outage.failures },
      'database available again',
    );
  }
}
