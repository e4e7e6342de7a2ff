/** `hookpost dead-letters [--endpoint ID] [--hours N]`: the dead-letter analysis as a table. */
import type { Config } from '../config.js';
import {
  analyzeDeadLetters,
  type EndpointDeadLetters,
  MAX_ANALYSIS_HOURS,
} from '../deliveries/dead-letter-analysis.js';
import { ALL_TENANTS } from '../tenants/scope.js';
import { withDatabase } from './database.js';
import { UsageError } from './usage-error.js';

export interface DeadLettersArgs {
  endpoint?: string | undefined;
  hours?: string | undefined;
}

/** Most endpoints listed; the worst come first. */
const MAX_ROWS = 500;

function parseHours(raw: string | undefined): number {
  if (raw === undefined) return 24;
  const hours = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || hours <= 0 || hours > MAX_ANALYSIS_HOURS) {
    throw new UsageError(
      `--hours must be a number of hours above 0 and at most ${MAX_ANALYSIS_HOURS}, got ${raw}`,
    );
  }
  return hours;
}

/** At most `max` characters, an ellipsis marking a cut (a long description must not widen every row). */
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

const utc = (d: Date) => `${d.toISOString().slice(0, 19).replace('T', ' ')}`;

/** Left-aligned text columns, right-aligned numbers, two spaces apart. */
function table(header: string[], rows: string[][], numeric: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatAnalysis(hours: number, endpoints: EndpointDeadLetters[]): string {
  if (endpoints.length === 0) return `No dead letters in the last ${hours} h.\n`;
  const rows = endpoints.map((e) => [
    e.endpoint_id,
    clip(e.endpoint_url ?? '-', 60),
    clip(e.endpoint_description ?? '-', 30),
    String(e.dead_count),
    e.pattern,
    e.primary_error ?? '-',
    e.primary_status_code === null ? '-' : String(e.primary_status_code),
    e.avg_attempts.toFixed(1),
    utc(e.first_dead_at),
    utc(e.last_dead_at),
  ]);
  const header = [
    'ENDPOINT',
    'URL',
    'DESCRIPTION',
    'DEAD',
    'PATTERN',
    'ERROR',
    'STATUS',
    'AVG ATTEMPTS',
    'FIRST DEAD (UTC)',
    'LAST DEAD (UTC)',
  ];
  const numeric = [false, false, false, true, false, false, true, true, false, false];
  const advice = endpoints.map((e) => `  ${e.endpoint_id}  ${e.advice}`);
  return (
    `Dead letters in the last ${hours} h, by endpoint:\n\n${table(header, rows, numeric)}\n\n` +
    `What to do:\n${advice.join('\n')}\n`
  );
}

export async function runDeadLetters(config: Config, args: DeadLettersArgs): Promise<number> {
  const hours = parseHours(args.hours);
  if (args.endpoint !== undefined && args.endpoint.trim() === '')
    throw new UsageError('--endpoint must not be empty');
  const endpoints = await withDatabase(config, (sql) =>
    // The CLI talks to the database as its operator: every tenant.
    analyzeDeadLetters(sql, ALL_TENANTS, {
      hours,
      endpointId: args.endpoint,
      limit: MAX_ROWS,
      thresholds: config.deadLetterPatterns,
    }),
  );
  process.stdout.write(formatAnalysis(hours, endpoints));
  return 0;
}
