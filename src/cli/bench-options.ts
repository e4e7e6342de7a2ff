/** The `hookpost bench` options that take more than a lookup: numbers, the fan-out choice, the partner mode. */
import { PARTNER_MODES, type PartnerMode } from '../bench/partners.js';
import { UsageError } from './usage-error.js';

/** A `--name` value that must be a positive number (an integer unless told); `fallback` when absent. */
export function positiveNumber(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  integer = true,
): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new UsageError(
      `--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(raw)}`,
    );
  }
  return value;
}

/** `bench --fan-out`, `--filters`, `--filtered K`: how many of the endpoints filter (undefined: no fan-out). */
export function fanOutOption(values: Record<string, unknown>): { filtered: number } | undefined {
  const endpoints = positiveNumber(values, 'endpoints', 10);
  if (values.filters === true && values.filtered !== undefined)
    throw new UsageError('--filters and --filtered K are one choice: give one');
  const filtered =
    values.filtered !== undefined
      ? positiveNumber(values, 'filtered', 1)
      : values.filters === true
        ? Math.floor(endpoints / 2)
        : 0;
  if (filtered > endpoints)
    throw new UsageError(`--filtered ${filtered} is more than the ${endpoints} endpoints`);
  // --filters and --filtered are fan-out runs: a filter decides among the endpoints an event reaches.
  if (values['fan-out'] !== true && filtered === 0) return undefined;
  if (values['ordering-keys'] !== undefined) throw new UsageError('--fan-out takes no --ordering-keys');
  return { filtered };
}

/** `bench --partner M`: one of PARTNER_MODES. */
export function partnerOption(value: unknown): PartnerMode | undefined {
  if (value === undefined) return undefined;
  if (!(PARTNER_MODES as readonly unknown[]).includes(value))
    throw new UsageError(`--partner must be one of ${PARTNER_MODES.join(', ')}, got ${String(value)}`);
  return value as PartnerMode;
}
