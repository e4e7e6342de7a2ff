/**
 * Validators for caller input that would otherwise pass the route schema and then fail further
 * in (PostgreSQL's JSON parser, JSON.stringify's recursion, undici's header check), turning a
 * caller's mistake into a 500 or into a delivery that can never be sent. Each one answers the
 * question before anything is written, so the route can give a 400 that names the field.
 */
import { z } from 'zod';

/** Deepest payload nesting accepted at enqueue (`[]` is depth 1). */
export const MAX_PAYLOAD_DEPTH = 512;
/** Deepest nesting in `metadata` objects (the object itself is depth 1). */
export const MAX_METADATA_DEPTH = 64;

/** A UTF-16 surrogate without its partner: no UTF-8 form, and PostgreSQL's jsonb refuses its `\u` escape (22P02). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `text` holds a lone surrogate (a `\ud800` escape in the JSON the caller sent). */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** A string that may be stored inside jsonb (an audit row's filter, metadata): no lone surrogate. */
export function jsonSafeString() {
  return z.string().refine((s) => !hasLoneSurrogate(s), { message: 'contains a lone UTF-16 surrogate' });
}

export interface JsonProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The first reason a parsed JSON value cannot be stored as jsonb: nesting deeper than `maxDepth`
 * (PostgreSQL's recursive parser stops at its stack limit, 54001) or a lone surrogate in a key or
 * string. The walk itself stops one level past the limit, so it cannot overflow the stack.
 */
export function jsonValueProblem(value: unknown, maxDepth: number): JsonProblem | undefined {
  const walk = (v: unknown, depth: number, path: (string | number)[]): JsonProblem | undefined => {
    if (typeof v === 'string') {
      return hasLoneSurrogate(v) ? { path, message: 'contains a lone UTF-16 surrogate' } : undefined;
    }
    if (v === null || typeof v !== 'object') return undefined;
    // Reported on the field itself: a path 64 keys long helps nobody.
    if (depth + 1 > maxDepth) return { path: [], message: `is nested deeper than ${maxDepth} levels` };
    const entries: [string | number, unknown][] = Array.isArray(v) ? [...v.entries()] : Object.entries(v);
    for (const [key, child] of entries) {
      if (typeof key === 'string' && hasLoneSurrogate(key)) {
        return { path, message: 'has a key with a lone UTF-16 surrogate' };
      }
      const problem = walk(child, depth + 1, [...path, key]);
      if (problem) return problem;
    }
    return undefined;
  };
  return walk(value, 0, []);
}

/** A JSON object stored as jsonb (endpoint or tenant `metadata`): bounded depth, no lone surrogates. */
export function jsonObjectSchema(maxDepth = MAX_METADATA_DEPTH) {
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const problem = jsonValueProblem(value, maxDepth);
    if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  });
}

/** RFC 9110 token: what undici accepts as a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * RFC 9110 field-value characters as undici checks them (HTAB, visible ASCII, obs-text
 * U+0080–U+00FF sent as latin1 bytes). A value outside this set is refused by undici on every
 * attempt, so it must be refused when it is stored.
 */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why `name` cannot be an HTTP header name, or undefined when it can. */
export function headerNameProblem(name: string): string | undefined {
  if (name.length > 256) return 'is longer than 256 characters';
  return HEADER_NAME.test(name) ? undefined : 'is not a valid header name (RFC 9110 token characters only)';
}

/** Why `value` cannot be sent as an HTTP header value, or undefined when it can. */
export function headerValueProblem(value: string): string | undefined {
  if (HEADER_VALUE.test(value)) return undefined;
  return 'may contain only tab, printable ASCII and characters up to U+00FF (no control characters or line breaks)';
}

/** Headers hookpost sets itself; an endpoint may not override them. */
export const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);
/**
 * A header value: at most `max` characters that undici will send. `passThrough` lets a route
 * accept a placeholder its store resolves (a masked value sent back by a PATCH).
 */
export function headerValueSchema(passThrough?: (value: string) => boolean, max = 4096) {
  return z
    .string()
    .max(max)
    .superRefine((value, ctx) => {
      if (passThrough?.(value)) return;
      const problem = headerValueProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
}

/**
 * Checks an endpoint's header names: at most 50, each a valid name, none of `reserved` (lower
 * case), none given twice in different case (both would be sent).
 */
export function checkHeaderNames(
  headers: Record<string, unknown>,
  ctx: z.RefinementCtx,
  reserved: ReadonlySet<string>,
): void {
  const names = Object.keys(headers);
  if (names.length > 50) ctx.addIssue({ code: 'custom', message: 'at most 50 headers' });
  const seen = new Set<string>();
  for (const name of names) {
    const problem = headerNameProblem(name);
    const lower = name.toLowerCase();
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
    else if (reserved.has(lower)) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'is set by hookpost and cannot be overridden' });
    } else if (seen.has(lower)) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'is given twice (header names ignore case)' });
    }
    seen.add(lower);
  }
}

const ISO_ZONED =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i;
/** PostgreSQL's timestamptz input takes zone offsets up to ±15:59 (22009 beyond). */
const MAX_OFFSET_HOURS = 15;
const MIN_MS = Date.parse('0001-01-01T00:00:00Z');
const MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Why an ISO 8601 time with a zone cannot be a PostgreSQL timestamptz parameter, or undefined.
 * PostgreSQL has no year 0000 and refuses offsets past ±15:59; the instant is also kept within
 * years 0001–9999 UTC so that its `toISOString()` form (which has no year 0 either) reads back.
 */
export function pgTimestampProblem(text: string): string | undefined {
  const match = ISO_ZONED.exec(text);
  const ms = Date.parse(text);
  if (!match || Number.isNaN(ms)) return 'must be an ISO 8601 timestamp with a zone';
  const [, year, month, day, hour, minute, second, , offsetHours, offsetMinutes] = match.map(Number);
  // Date.parse rolls 2026-02-30 over to March; PostgreSQL refuses it (22008).
  const calendar = new Date(Date.UTC(2000, month! - 1, day!));
  calendar.setUTCFullYear(year!);
  if (
    calendar.getUTCMonth() !== month! - 1 ||
    calendar.getUTCDate() !== day ||
    hour! > 23 ||
    minute! > 59 ||
    (second ?? 0) > 59
  ) {
    return 'is not a valid calendar date and time';
  }
  if (match[7] !== undefined && (offsetHours! > MAX_OFFSET_HOURS || offsetMinutes! > 59)) {
    return 'has a zone offset beyond ±15:59';
  }
  if (ms < MIN_MS || ms > MAX_MS) return 'must be between 0001-01-01 and 9999-12-31 (UTC)';
  return undefined;
}

/**
 * A timestamp parameter for PostgreSQL: ISO 8601 with a zone that PostgreSQL can hold. No
 * transform, so the schema still renders as JSON Schema (`format: date-time`).
 */
export const pgTimestampSchema = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 timestamp with a zone' })
  .superRefine((text, ctx) => {
    const problem = pgTimestampProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
