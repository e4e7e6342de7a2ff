/**
 * The filter syntax webhook senders share (Convoy, Hookdeck), parsed into conditions once per
 * endpoint version. Parsing is where every limit is enforced — operators, operand types, nesting
 * depth, size — so evaluation (match.ts) needs no checks and is bounded by construction: no
 * regular expressions, no recursion deeper than the filter, lists matched through sets.
 */
import { hasLoneSurrogate } from '../api/validation.js';

/** Deepest accepted nesting of a filter document (`{}` is depth 1, `{"a": {}}` depth 2). */
export const MAX_FILTER_DEPTH = 32;
/** Largest accepted filter, in bytes of its compact JSON text. */
export const MAX_FILTER_BYTES = 16 * 1024;

export type Scalar = string | number | boolean | null;

/** Values of one operand list by type, so `$in` costs a hash lookup per value, not a list scan. */
export interface ScalarSet {
  strings: Set<string>;
  numbers: Set<number>;
  booleans: Set<boolean>;
  hasNull: boolean;
}

/**
 * A parsed filter: a condition on a *selection* (the values at one place in the payload; empty
 * when the key is absent, several after descending through an array of objects).
 */
export type Condition =
  | { kind: 'eq'; value: Scalar }
  | { kind: 'neq'; value: Scalar }
  | { kind: 'gt' | 'gte' | 'lt' | 'lte'; value: number | string }
  | { kind: 'in' | 'nin'; values: ScalarSet }
  | { kind: 'exist'; present: boolean }
  | { kind: 'and' | 'or'; conditions: Condition[] }
  | { kind: 'not'; condition: Condition }
  | { kind: 'field'; key: string; condition: Condition };

/** Why a filter is refused: the operator concerned (null when none is) and where, as a JSON pointer. */
export class FilterError extends Error {
  constructor(
    readonly operator: string | null,
    /** RFC 6901 pointer into the filter document ("" is the whole filter). */
    readonly pointer: string,
    readonly reason: string,
  ) {
    super(`${pointer === '' ? 'filter' : `filter${pointer}`}: ${reason}`);
  }
}

/** RFC 6901: `~` and `/` in a key are escaped so the pointer can be split back into keys. */
function pointerTo(parent: string, key: string | number): string {
  return `${parent}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function isScalar(v: unknown): v is Scalar {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number';
}

/**
 * Checks depth first, with a walk that stops one level past the limit (a filter nested 100,000
 * levels deep must not overflow the stack), then size: only a bounded document is serialised.
 */
function checkShape(value: unknown): void {
  const walk = (v: unknown, depth: number, pointer: string): void => {
    if (v === null || typeof v !== 'object') return;
    if (depth + 1 > MAX_FILTER_DEPTH)
      throw new FilterError(null, pointer, `is nested deeper than ${MAX_FILTER_DEPTH} levels`);
    const entries: [string | number, unknown][] = Array.isArray(v) ? [...v.entries()] : Object.entries(v);
    for (const [key, child] of entries) walk(child, depth + 1, pointerTo(pointer, key));
  };
  walk(value, 0, '');
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_FILTER_BYTES)
    throw new FilterError(null, '', `is ${bytes} bytes; at most ${MAX_FILTER_BYTES} are accepted`);
}

function scalarSet(values: Scalar[]): ScalarSet {
  const set: ScalarSet = { strings: new Set(), numbers: new Set(), booleans: new Set(), hasNull: false };
  for (const v of values) {
    if (v === null) set.hasNull = true;
    else if (typeof v === 'string') set.strings.add(v);
    else if (typeof v === 'number') set.numbers.add(v);
    else set.booleans.add(v);
  }
  return set;
}

/** Text PostgreSQL can store in jsonb (and a jsonpath can hold): no lone surrogate, no NUL. */
function checkText(text: string, operator: string | null, pointer: string): void {
  if (hasLoneSurrogate(text)) throw new FilterError(operator, pointer, 'contains a lone UTF-16 surrogate');
  if (text.includes('\u0000'))
    throw new FilterError(operator, pointer, 'contains the NUL character (\\u0000)');
}

/** A scalar operand as the filter holds it: numbers must be finite (JSON.parse makes 1e400 Infinity). */
function checkScalar(v: unknown, operator: string, pointer: string, allowed: string): Scalar {
  if (!isScalar(v)) throw new FilterError(operator, pointer, `${operator} takes ${allowed}`);
  if (typeof v === 'number' && !Number.isFinite(v))
    throw new FilterError(operator, pointer, `${operator}: the number is out of range`);
  if (typeof v === 'string') checkText(v, operator, pointer);
  return v;
}

function operatorCondition(operator: string, operand: unknown, pointer: string): Condition {
  switch (operator) {
    case '$eq':
    case '$neq':
      return {
        kind: operator === '$eq' ? 'eq' : 'neq',
        value: checkScalar(operand, operator, pointer, 'a string, number, boolean or null'),
      };
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const value = checkScalar(operand, operator, pointer, 'a number or a string');
      if (typeof value !== 'number' && typeof value !== 'string')
        throw new FilterError(operator, pointer, `${operator} takes a number or a string`);
      return { kind: operator.slice(1) as 'gt' | 'gte' | 'lt' | 'lte', value };
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand) || operand.length === 0)
        throw new FilterError(operator, pointer, `${operator} takes a non-empty list of values`);
      const values = operand.map((v, i) =>
        checkScalar(v, operator, pointerTo(pointer, i), 'a list of strings, numbers, booleans or nulls'),
      );
      return { kind: operator === '$in' ? 'in' : 'nin', values: scalarSet(values) };
    }
    case '$exist':
      if (typeof operand !== 'boolean')
        throw new FilterError(operator, pointer, '$exist takes true or false');
      return { kind: 'exist', present: operand };
    case '$or':
    case '$and': {
      if (!Array.isArray(operand) || operand.length === 0)
        throw new FilterError(operator, pointer, `${operator} takes a non-empty list of filters`);
      const conditions = operand.map((f, i) => valueCondition(f, pointerTo(pointer, i), operator));
      return { kind: operator === '$or' ? 'or' : 'and', conditions };
    }
    case '$not':
      return { kind: 'not', condition: valueCondition(operand, pointer, operator) };
    default:
      throw new FilterError(operator, pointer, `unknown operator ${operator}`);
  }
}

/** All of `conditions`, without a wrapper when there is one. */
function allOf(conditions: Condition[]): Condition {
  return conditions.length === 1 ? conditions[0]! : { kind: 'and', conditions };
}

/**
 * A filter in value position: a scalar is equality, a list needs every element to match (so
 * `["a", "b"]` against an array field means "contains both"), an object is all of its members —
 * operators applied here, other keys descending into the payload.
 */
function valueCondition(filter: unknown, pointer: string, within: string | null): Condition {
  if (Array.isArray(filter)) {
    if (filter.length === 0)
      throw new FilterError(within, pointer, 'an empty list matches everything: leave it out');
    return allOf(filter.map((f, i) => valueCondition(f, pointerTo(pointer, i), within)));
  }
  if (!isObject(filter)) return { kind: 'eq', value: checkScalar(filter, '$eq', pointer, 'a JSON value') };
  const keys = Object.keys(filter);
  if (keys.length === 0)
    throw new FilterError(within, pointer, 'an empty object matches everything: use {"$exist": true}');
  return allOf(
    keys.map((key) => {
      const at = pointerTo(pointer, key);
      checkText(key, within, at);
      if (key.startsWith('$')) return operatorCondition(key, filter[key], at);
      return { kind: 'field', key, condition: valueCondition(filter[key], at, within) };
    }),
  );
}

/** A parsed filter and the document it came from (stored and shown as written). */
export interface Filter {
  document: Record<string, unknown>;
  condition: Condition | null;
}

/**
 * Parses and validates an endpoint's filter. The whole filter is a JSON object; `{}` matches
 * every payload. Throws FilterError naming the operator and the JSON pointer of what is wrong.
 */
export function parseFilter(value: unknown): Filter {
  if (!isObject(value)) throw new FilterError(null, '', 'must be a JSON object');
  checkShape(value);
  return {
    document: value,
    condition: Object.keys(value).length === 0 ? null : valueCondition(value, '', null),
  };
}
