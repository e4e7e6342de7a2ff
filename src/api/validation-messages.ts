/**
 * zod's issues in words for the person who sent the request. zod's own messages describe its
 * internals ("Invalid input: expected string, received undefined"); the API answers with the
 * field and what it must be instead ("event_type: is required"). A message a schema sets itself
 * (`.regex(re, 'must be …')`) is kept: zod gives it precedence over this map.
 */
import type { z } from 'zod';

type RawIssue = z.core.$ZodRawIssue;

const ARTICLE: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  bigint: 'a whole number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  date: 'a date',
  null: 'null',
};

/** How a JSON value is named in a message: "a string", "null", "an array". */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'a whole number' : 'a number';
  return ARTICLE[typeof value] ?? typeof value;
}

function bound(
  issue: RawIssue & { origin?: string; inclusive?: boolean },
  limit: number | bigint,
  small: boolean,
) {
  const n = Number(limit);
  switch (issue.origin) {
    case 'string':
      if (small && n === 1) return 'must not be empty';
      return `must be at ${small ? 'least' : 'most'} ${n} character${n === 1 ? '' : 's'} long`;
    case 'array':
    case 'set':
      if (small && n === 1) return 'must have at least one item';
      return `must have at ${small ? 'least' : 'most'} ${n} item${n === 1 ? '' : 's'}`;
    default:
      if (issue.inclusive === false) return `must be ${small ? 'greater' : 'less'} than ${n}`;
      return `must be at ${small ? 'least' : 'most'} ${n}`;
  }
}

const FORMATS: Record<string, string> = {
  url: 'must be a URL',
  email: 'must be an email address',
  datetime: 'must be an ISO 8601 time with a zone, like 2026-05-01T10:00:00Z',
  date: 'must be a date, like 2026-05-01',
  uuid: 'must be a UUID',
  regex: 'has an invalid format',
};

/** A zod error map: the message for one issue, or undefined to keep zod's own. */
export function humanIssueMessage(issue: RawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      const expected = ARTICLE[issue.expected] ?? issue.expected;
      return `must be ${expected}, not ${describeValue(issue.input)}`;
    }
    case 'too_small':
      return bound(issue, issue.minimum, true);
    case 'too_big':
      return bound(issue, issue.maximum, false);
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return FORMATS[issue.format] ?? `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${Number(issue.divisor)}`;
    case 'invalid_union':
      return 'does not match any accepted form';
    case 'invalid_key':
      return 'has a key that is not allowed';
    case 'invalid_element':
      return 'has an entry that is not allowed';
    case 'custom':
      return issue.message ?? 'is invalid';
    default:
      return undefined;
  }
}
