/**
 * A parsed filter (syntax.ts) compiled into a PostgreSQL SQL/JSON path predicate, once per
 * endpoint version: the fan-out evaluates it with `jsonb_path_match` in the statement that creates
 * the deliveries (deliveries/fan-out.ts; why there: docs/architecture.md, "Filters").
 *
 * How the contract's semantics map onto jsonpath (lax mode):
 * - a key step is a member accessor, `$."data"."currency"`; on an array it takes that key of each
 *   element (lax unwraps one level), and a key that is not there selects nothing;
 * - "some value matches" is `exists(P ? (@ == x))`: the filter unwraps an array value, so an
 *   array field matches when it contains the value;
 * - values of types that do not compare make a comparison `unknown` (null compares with anything
 *   for `==`), so `$eq`, `$in` and the orderings never match them; `$neq` and `$nin` are "no value
 *   is equal, or unknown": `!exists(P ? (@ == x || (@ == x) is unknown))`, true when absent;
 * - `$exist` is `exists(P)`, and the combinators are `&&`, `||` and `!` over those predicates,
 *   never over an `unknown` (every leaf is an `exists`, which is true or false).
 * Every key and string is written as a JSON string literal, which is also jsonpath's syntax for
 * one, so nothing in a filter is ever read as jsonpath syntax.
 */
import { type Condition, FilterError, parseFilter, type Scalar, type ScalarSet } from './syntax.js';

/**
 * Largest accepted compiled path. The document's own limit (16 KiB) bounds the compiled form only
 * up to the prefix a leaf repeats: `{"<a long key>": {"$or": [{"a": 1}, …]}}` writes the key once
 * and compiles it into every branch.
 */
export const MAX_COMPILED_BYTES = 128 * 1024;

type Comparison = Extract<Condition, { kind: 'eq' | 'neq' | 'in' | 'nin' | 'gt' | 'gte' | 'lt' | 'lte' }>;

/** A jsonpath literal: JSON's string escapes and number syntax are jsonpath's. */
const literal = (v: Scalar): string => JSON.stringify(v);

const step = (path: string, key: string) => `${path}.${JSON.stringify(key)}`;

/** The list's values, and one per type present (what `is unknown` needs to tell comparability). */
function listed(set: ScalarSet): { all: Scalar[]; perType: Scalar[] } {
  const pick = <T>(s: Set<T>) => (s.size > 0 ? [s.values().next().value as T] : []);
  return {
    all: [...set.strings, ...set.numbers, ...set.booleans, ...(set.hasNull ? [null] : [])],
    perType: set.hasNull ? [null] : [...pick(set.strings), ...pick(set.numbers), ...pick(set.booleans)],
  };
}

/**
 * The item test inside `P ? (…)`: for `$eq`, `$in` and the orderings a value that satisfies the
 * comparison; for `$neq` and `$nin` a value that violates it (equal, or not comparable).
 */
function itemTest(c: Comparison): string {
  switch (c.kind) {
    case 'eq':
      return `@ == ${literal(c.value)}`;
    case 'neq': {
      const x = literal(c.value);
      return `@ == ${x} || (@ == ${x}) is unknown`;
    }
    case 'in':
      return listed(c.values)
        .all.map((v) => `@ == ${literal(v)}`)
        .join(' || ');
    case 'nin': {
      const { all, perType } = listed(c.values);
      const equal = all.map((v) => `@ == ${literal(v)}`);
      // null in the list compares with every value: then no value is incomparable.
      if (c.values.hasNull) return equal.join(' || ');
      const incomparable = perType.map((v) => `(@ == ${literal(v)}) is unknown`).join(' && ');
      return `${equal.join(' || ')} || (${incomparable})`;
    }
    default:
      return `@ ${{ gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.kind]} ${literal(c.value)}`;
  }
}

const universal = (c: Condition) => c.kind === 'neq' || c.kind === 'nin';
const existential = (c: Condition) => ['eq', 'in', 'gt', 'gte', 'lt', 'lte'].includes(c.kind);

function predicate(condition: Condition, path: string): string {
  switch (condition.kind) {
    case 'field':
      return predicate(condition.condition, step(path, condition.key));
    case 'and':
    case 'or': {
      // Comparisons on the same values merge into one scan: "some value is 1" or "some value is
      // 2" is "some value is 1 or 2" ($or of $eq, $in, orderings); "no value violates A" and "no
      // value violates B" is "no value violates A or B" ($and of $neq, $nin).
      const mergeable = condition.kind === 'or' ? existential : universal;
      const merged = condition.conditions.filter(mergeable) as Comparison[];
      const parts = condition.conditions.filter((c) => !mergeable(c)).map((c) => predicate(c, path));
      if (merged.length > 0) {
        const tests = merged.map((c) => `(${itemTest(c)})`).join(' || ');
        parts.unshift(
          condition.kind === 'or' ? `exists(${path} ? (${tests}))` : `!exists(${path} ? (${tests}))`,
        );
      }
      return parts.length === 1 ? parts[0]! : `(${parts.join(condition.kind === 'and' ? ' && ' : ' || ')})`;
    }
    case 'not':
      return `!(${predicate(condition.condition, path)})`;
    case 'exist':
      return condition.present ? `exists(${path})` : `!exists(${path})`;
    case 'neq':
    case 'nin':
      // No value violates it: true when nothing is selected (an absent key).
      return `!exists(${path} ? (${itemTest(condition)}))`;
    default:
      return `exists(${path} ? (${itemTest(condition)}))`;
  }
}

/**
 * The filter as a jsonpath predicate for `jsonb_path_match`; null for a filter without a condition
 * (`{}`), which matches everything and needs no evaluation. Throws FilterError when the compiled
 * form is over MAX_COMPILED_BYTES.
 */
export function toJsonPath(condition: Condition | null): string | null {
  if (condition === null) return null;
  const path = `lax ${predicate(condition, '$')}`;
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_COMPILED_BYTES)
    throw new FilterError(
      null,
      '',
      `compiles to ${bytes} bytes of SQL/JSON path, at most ${MAX_COMPILED_BYTES}: write a key that ` +
        'many branches repeat once, outside them (or use $in)',
    );
  return path;
}

/** A validated filter: the document (stored and shown) and its compiled path (null: matches all). */
export interface CompiledFilter {
  document: Record<string, unknown>;
  path: string | null;
}

/**
 * Validates a filter document and compiles it; throws FilterError (operator and JSON pointer)
 * for anything the contract refuses.
 */
export function compileFilter(value: unknown): CompiledFilter {
  const { document, condition } = parseFilter(value);
  return { document, path: toJsonPath(condition) };
}
