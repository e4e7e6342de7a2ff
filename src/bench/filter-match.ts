/**
 * Evaluates a parsed filter (syntax.ts) against a parsed payload. Pure and allocation-light: the
 * common case (descending through objects to one value) allocates nothing. The work is bounded by
 * the filter's size times the payload's: each condition visits each selected value at most once,
 * `$in` lists are sets, and the recursion is no deeper than the filter (at most 32 levels).
 *
 * Semantics (docs/filters.md):
 * - A condition applies to a *selection*: the values at one place in the payload. A key that is
 *   not there selects nothing (absent); descending through an array selects that key of each of
 *   its elements, so `{"items": {"sku": "A"}}` holds when some item has sku A.
 * - A comparison looks into an array value: `{"tags": "b"}` holds when tags contains "b".
 * - Numbers compare with numbers, strings with strings, booleans with booleans; null equals only
 *   null but may be compared with anything for (in)equality, as in SQL/JSON path. Any other mix
 *   of types never matches, whatever the operator, `$neq` and `$nin` included.
 * - `$neq` and `$nin` hold for an absent key; `$exist: true` holds for a key present even as null.
 */
import type { Condition, Scalar, ScalarSet } from '../filters/syntax.js';

/** Several selected values (after descending through an array), told apart from one array value. */
class Many {
  constructor(readonly values: unknown[]) {}
}

/** What a condition sees: undefined when nothing is selected (JSON has no undefined). */
type Selection = unknown;

function member(value: unknown, key: string, into: unknown[]): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const element of value) {
      if (
        element !== null &&
        typeof element === 'object' &&
        !Array.isArray(element) &&
        Object.hasOwn(element, key)
      )
        into.push((element as Record<string, unknown>)[key]);
    }
  } else if (Object.hasOwn(value, key)) into.push((value as Record<string, unknown>)[key]);
}

/** The selection one key further down. */
function descend(selection: Selection, key: string): Selection {
  if (selection === undefined || selection === null || typeof selection !== 'object') return undefined;
  // One object, one key: the usual step, with nothing allocated.
  if (!Array.isArray(selection) && !(selection instanceof Many))
    return Object.hasOwn(selection, key) ? (selection as Record<string, unknown>)[key] : undefined;
  const found: unknown[] = [];
  if (selection instanceof Many) for (const value of selection.values) member(value, key, found);
  else member(selection, key, found);
  if (found.length === 0) return undefined;
  return found.length === 1 ? found[0] : new Many(found);
}

/** Same JSON type (null counts as comparable with any type, for equality only). */
function equalityComparable(v: unknown, x: Scalar): boolean {
  return v === null || x === null || typeof v === typeof x;
}

function inSet(v: unknown, set: ScalarSet): boolean {
  if (v === null) return set.hasNull;
  switch (typeof v) {
    case 'string':
      return set.strings.has(v);
    case 'number':
      return set.numbers.has(v);
    case 'boolean':
      return set.booleans.has(v);
    default:
      return false;
  }
}

/** A value `$nin` can judge: one whose type some list member has, or null (or a list with null). */
function setComparable(v: unknown, set: ScalarSet): boolean {
  if (v === null || set.hasNull) return true;
  switch (typeof v) {
    case 'string':
      return set.strings.size > 0;
    case 'number':
      return set.numbers.size > 0;
    case 'boolean':
      return set.booleans.size > 0;
    default:
      return false;
  }
}

function ordered(kind: 'gt' | 'gte' | 'lt' | 'lte', v: unknown, x: number | string): boolean {
  if (typeof v !== typeof x) return false;
  const a = v as number | string;
  switch (kind) {
    case 'gt':
      return a > x;
    case 'gte':
      return a >= x;
    case 'lt':
      return a < x;
    case 'lte':
      return a <= x;
  }
}

type Comparison = Extract<Condition, { kind: 'eq' | 'neq' | 'in' | 'nin' | 'gt' | 'gte' | 'lt' | 'lte' }>;

/**
 * Whether one compared value hits the comparison: satisfies it for `$eq`, `$in` and the orderings;
 * violates it for `$neq` and `$nin` (equal, or of a type that does not compare), whose condition
 * holds when no value does.
 */
function hit(c: Comparison, v: unknown): boolean {
  switch (c.kind) {
    case 'eq':
      return v === c.value;
    case 'neq':
      return v === c.value || !equalityComparable(v, c.value);
    case 'in':
      return inSet(v, c.values);
    case 'nin':
      return inSet(v, c.values) || !setComparable(v, c.values);
    default:
      return ordered(c.kind, v, c.value);
  }
}

/** Whether some value of the selection hits: its values, with one level of array unwrapped. */
function anyHit(c: Comparison, selection: Selection): boolean {
  if (selection instanceof Many) {
    for (const v of selection.values) if (anyHit(c, v)) return true;
    return false;
  }
  if (!Array.isArray(selection)) return hit(c, selection);
  // As in SQL/JSON path's lax mode: the comparison unwraps an element that is itself an array.
  for (const element of selection) {
    if (!Array.isArray(element)) {
      if (hit(c, element)) return true;
    } else for (const inner of element) if (hit(c, inner)) return true;
  }
  return false;
}

function holds(condition: Condition, selection: Selection): boolean {
  switch (condition.kind) {
    case 'field':
      return holds(condition.condition, descend(selection, condition.key));
    case 'and':
      for (const c of condition.conditions) if (!holds(c, selection)) return false;
      return true;
    case 'or':
      for (const c of condition.conditions) if (holds(c, selection)) return true;
      return false;
    case 'not':
      return !holds(condition.condition, selection);
    case 'exist':
      return (selection !== undefined) === condition.present;
    case 'neq':
    case 'nin':
      // An absent key holds; otherwise no value may be equal, or of a type that does not compare.
      return selection === undefined || !anyHit(condition, selection);
    default:
      return selection !== undefined && anyHit(condition, selection);
  }
}

/** True when the payload matches the condition; a filter without one (`{}`) matches everything. */
export function matches(condition: Condition | null, payload: unknown): boolean {
  return condition === null || holds(condition, payload);
}
