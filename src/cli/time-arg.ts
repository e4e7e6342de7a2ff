/**
 * `--since` / `--until` values: an ISO 8601 timestamp with a zone (`2026-05-01T10:00:00Z`), a
 * date (midnight UTC), or an age such as `90m`, `6h`, `2d` (that long before `now`). A timestamp
 * without a zone is refused rather than guessed: the server and the operator may disagree on
 * the local zone.
 */
import { pgTimestampProblem } from '../api/validation.js';
import { UsageError } from './usage-error.js';

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Returns the moment as ISO 8601 (UTC); throws UsageError naming the option. */
export function parseTimeArg(option: string, value: string, now: Date): string {
  const age = /^(\d+(?:\.\d+)?)([smhd])$/.exec(value.trim());
  if (age) {
    const ms = now.getTime() - Number(age[1]) * UNIT_MS[age[2]!]!;
    // An age past the year 0001 (or past what Date can hold) is refused, not sent to PostgreSQL.
    if (!(ms >= Date.parse('0001-01-01T00:00:00Z')))
      throw new UsageError(`--${option} reaches before the year 0001; got ${value}`);
    return new Date(ms).toISOString();
  }
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const zoned = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(value);
  const ms = Date.parse(value);
  if ((!dateOnly && !zoned) || Number.isNaN(ms)) {
    throw new UsageError(
      `--${option} must be an ISO 8601 time with a zone (2026-05-01T10:00:00Z), a date, or an age like 6h or 2d; got ${value}`,
    );
  }
  return representable(option, value, new Date(ms).toISOString());
}

/** The same bounds as the API's: PostgreSQL refuses year 0000 and offsets beyond ±15:59. */
function representable(option: string, value: string, iso: string): string {
  const problem =
    pgTimestampProblem(/^\d{4}-\d{2}-\d{2}$/.test(value) ? iso : value) ?? pgTimestampProblem(iso);
  if (problem) throw new UsageError(`--${option} ${problem}; got ${value}`);
  return iso;
}
