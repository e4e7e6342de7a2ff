/**
 * The contract's filter semantics as a table: filter, payload, whether it matches. Shared by the
 * evaluator's unit test and the test that runs the same table through PostgreSQL's jsonpath.
 */
export interface FilterCase {
  name: string;
  filter: Record<string, unknown>;
  payload: unknown;
  matches: boolean;
  /** The payload's exact text, when JSON.parse would change it (numbers beyond a double's precision). */
  payloadText?: string;
  /** Why the in-process evaluator of `bench --filter-cost` decides otherwise (JavaScript numbers, UTF-16). */
  sqlOnly?: string;
}

const order = {
  type: 'order.created',
  data: {
    id: 'ord_1',
    currency: 'EUR',
    amount: 120,
    paid: true,
    coupon: null,
    tags: ['gift', 'priority'],
    codes: [3, 7],
    items: [
      { sku: 'A', qty: 1, price: 10 },
      { sku: 'B', qty: 2, price: 55 },
    ],
    customer: { id: 'cus_1', country: 'DE', address: { city: 'Berlin' } },
  },
};

const c = (name: string, filter: Record<string, unknown>, matches: boolean, payload: unknown = order) => ({
  name,
  filter,
  payload,
  matches,
});

export const FILTER_CASES: FilterCase[] = [
  // Plain values and nesting
  c('empty filter matches everything', {}, true),
  c('top-level string equal', { type: 'order.created' }, true),
  c('top-level string differs', { type: 'order.updated' }, false),
  c('strings are case-sensitive', { type: 'Order.Created' }, false),
  c('nested object descends', { data: { currency: 'EUR' } }, true),
  c('nested object, other value', { data: { currency: 'USD' } }, false),
  c('all keys of one object must match', { data: { currency: 'EUR', amount: 120 } }, true),
  c('one key of several fails', { data: { currency: 'EUR', amount: 121 } }, false),
  c('three levels down', { data: { customer: { address: { city: 'Berlin' } } } }, true),
  c('number equal by value', { data: { amount: 120.0 } }, true),
  c('number by value: 1.2e2', { data: { amount: 1.2e2 } }, true),
  c('boolean equal', { data: { paid: true } }, true),
  c('boolean differs', { data: { paid: false } }, false),
  c('null equals null', { data: { coupon: null } }, true),
  c('null does not equal an absent key', { data: { missing: null } }, false),
  c('absent key never equals', { data: { missing: 'x' } }, false),
  c('descending into a scalar selects nothing', { type: { sub: 'x' } }, false),
  // Mixed types
  c('number filter, string field', { type: 5 }, false),
  c('string "120" does not equal number 120', { data: { amount: '120' } }, false),
  c('true does not equal 1', { data: { paid: 1 } }, false),
  c('null does not equal false', { data: { coupon: false } }, false),
  c('string does not equal an object', { data: { customer: 'cus_1' } }, false),
  // Arrays
  c('array contains the value', { data: { tags: 'gift' } }, true),
  c('array does not contain the value', { data: { tags: 'sale' } }, false),
  c('array of numbers contains', { data: { codes: 7 } }, true),
  c('list filter: array contains every value', { data: { tags: ['gift', 'priority'] } }, true),
  c('list filter: one value missing', { data: { tags: ['gift', 'sale'] } }, false),
  c('list filter against a scalar of the same value', { type: ['order.created'] }, true),
  c('descending through an array of objects', { data: { items: { sku: 'B' } } }, true),
  c('no element has that value', { data: { items: { sku: 'C' } } }, false),
  c('conditions through an array hold on any element', { data: { items: { sku: 'A', qty: 2 } } }, true),
  c('operator through an array of objects', { data: { items: { price: { $gt: 50 } } } }, true),
  c('operator through an array, none above', { data: { items: { price: { $gt: 60 } } } }, false),
  c('an array of arrays is looked into twice', { m: 1 }, true, { m: [[0, 1]] }),
  c('three levels of arrays are not', { m: 1 }, false, { m: [[[1]]] }),
  c('a key step looks into one level of array', { a: { b: 1 } }, false, { a: [[{ b: 1 }]] }),
  {
    name: 'numbers compare exactly, beyond a double',
    filter: { n: { $gt: 100 } },
    payload: null,
    payloadText: '{"n": 100.0000000000000001}',
    matches: true,
    sqlOnly: 'JSON.parse reads the number as 100',
  },
  {
    name: 'strings order by code point (U+FFFF before U+1F600)',
    filter: { s: { $lt: '\u{1F600}' } },
    payload: { s: '\uffff' },
    matches: true,
    sqlOnly: 'JavaScript compares UTF-16 code units',
  },
  c('an array at the top descends into its objects', { sku: 'A' }, true, [{ sku: 'A' }, { sku: 'B' }]),
  // $eq / $neq
  c('$eq string', { type: { $eq: 'order.created' } }, true),
  c('$eq on an array field: contains', { data: { tags: { $eq: 'priority' } } }, true),
  c('$eq null', { data: { coupon: { $eq: null } } }, true),
  c('$eq mixed types', { data: { amount: { $eq: '120' } } }, false),
  c('$neq different string', { type: { $neq: 'order.updated' } }, true),
  c('$neq same string', { type: { $neq: 'order.created' } }, false),
  c('$neq matches an absent key', { data: { missing: { $neq: 'x' } } }, true),
  c('$neq absent nested parent', { nothing: { deeper: { $neq: 1 } } }, true),
  c('$neq mixed types never matches', { data: { amount: { $neq: 'x' } } }, false),
  c('$neq: a string is never "not equal" to a number', { type: { $neq: 5 } }, false),
  c('$neq null: a present non-null value', { data: { currency: { $neq: null } } }, true),
  c('$neq null: a null value', { data: { coupon: { $neq: null } } }, false),
  c('$neq a string against null', { data: { coupon: { $neq: 'x' } } }, true),
  c('$neq on an array: contains no such element', { data: { tags: { $neq: 'sale' } } }, true),
  c('$neq on an array that contains it', { data: { tags: { $neq: 'gift' } } }, false),
  c('$neq on an empty array', { list: { $neq: 'x' } }, true, { list: [] }),
  c('$neq against an object value', { data: { customer: { $neq: 'x' } } }, false),
  // Ordering
  c('$gt number', { data: { amount: { $gt: 100 } } }, true),
  c('$gt equal is not greater', { data: { amount: { $gt: 120 } } }, false),
  c('$gte equal', { data: { amount: { $gte: 120 } } }, true),
  c('$lt number', { data: { amount: { $lt: 120.5 } } }, true),
  c('$lte below', { data: { amount: { $lte: 119 } } }, false),
  c('$lte equal', { data: { amount: { $lte: 120 } } }, true),
  c('$lte strings', { data: { currency: { $lte: 'EUR' } } }, true),
  c('$gt and $lt together: a range', { data: { amount: { $gt: 100, $lt: 200 } } }, true),
  c('a range the value is outside', { data: { amount: { $gt: 100, $lt: 110 } } }, false),
  c('$gt negative numbers', { n: { $gt: -10 } }, true, { n: -2.5 }),
  c('$gt strings compare as strings', { type: { $gt: 'order.a' } }, true),
  c('$lt strings: case matters (Z < a)', { s: { $lt: 'a' } }, true, { s: 'Z' }),
  c('$gte ISO timestamps compare as strings', { at: { $gte: '2024-01-01T00:00:00Z' } }, true, {
    at: '2024-06-01T12:00:00Z',
  }),
  c('$gt number against a string field', { type: { $gt: 1 } }, false),
  c('$gt string against a number field', { data: { amount: { $gt: '1' } } }, false),
  c('$lt number against null', { data: { coupon: { $lt: 1 } } }, false),
  c('$gt against a boolean', { data: { paid: { $gt: 0 } } }, false),
  c('$gt on an absent key', { data: { missing: { $gt: 0 } } }, false),
  c('$gt on an array: some element', { data: { codes: { $gt: 5 } } }, true),
  c('$lt on an array: no element', { data: { codes: { $lt: 3 } } }, false),
  // $in / $nin
  c('$in', { data: { currency: { $in: ['EUR', 'GBP'] } } }, true),
  c('$in, not listed', { data: { currency: { $in: ['USD', 'GBP'] } } }, false),
  c('$in numbers', { data: { amount: { $in: [100, 120] } } }, true),
  c('$in mixed types never match', { data: { amount: { $in: ['120'] } } }, false),
  c('$in a list of several types', { data: { amount: { $in: ['x', 120] } } }, true),
  c('$in null', { data: { coupon: { $in: [null, 'x'] } } }, true),
  c('$in on an array field: some element listed', { data: { tags: { $in: ['sale', 'gift'] } } }, true),
  c('$in on an absent key', { data: { missing: { $in: ['x'] } } }, false),
  c('$nin', { data: { currency: { $nin: ['USD', 'GBP'] } } }, true),
  c('$nin, listed', { data: { currency: { $nin: ['EUR'] } } }, false),
  c('$nin matches an absent key', { data: { missing: { $nin: ['x'] } } }, true),
  c('$nin mixed types never matches', { data: { amount: { $nin: ['x'] } } }, false),
  c('$nin with a list of several types', { data: { amount: { $nin: ['x', 5] } } }, true),
  c('$nin on an array field: no element listed', { data: { tags: { $nin: ['sale'] } } }, true),
  c('$nin on an array field: one listed', { data: { tags: { $nin: ['sale', 'gift'] } } }, false),
  c('$nin null against a string', { data: { currency: { $nin: [null] } } }, true),
  // $exist
  c('$exist true, present', { data: { currency: { $exist: true } } }, true),
  c('$exist true, present as null', { data: { coupon: { $exist: true } } }, true),
  c('$exist true, absent', { data: { missing: { $exist: true } } }, false),
  c('$exist false, absent', { data: { missing: { $exist: false } } }, true),
  c('$exist false, present as null', { data: { coupon: { $exist: false } } }, false),
  c('$exist false, parent absent too', { nothing: { deeper: { $exist: false } } }, true),
  c('$exist true on an empty array', { list: { $exist: true } }, true, { list: [] }),
  c('$exist through an array of objects', { data: { items: { qty: { $exist: true } } } }, true),
  // Combinators
  c('$or one holds', { $or: [{ type: 'x' }, { data: { currency: 'EUR' } }] }, true),
  c('$or none holds', { $or: [{ type: 'x' }, { data: { currency: 'USD' } }] }, false),
  c('$and both hold', { $and: [{ type: 'order.created' }, { data: { paid: true } }] }, true),
  c('$and one fails', { $and: [{ type: 'order.created' }, { data: { paid: false } }] }, false),
  c('$not of a plain value', { $not: { type: 'order.updated' } }, true),
  c('$not of a match', { $not: { type: 'order.created' } }, false),
  c('$not of $or', { $not: { $or: [{ type: 'x' }, { data: { currency: 'USD' } }] } }, true),
  c('$not of $or that holds', { $not: { $or: [{ type: 'x' }, { data: { currency: 'EUR' } }] } }, false),
  c('$not of $and', { $not: { $and: [{ type: 'order.created' }, { data: { paid: false } }] } }, true),
  c('$not of $not', { $not: { $not: { type: 'order.created' } } }, true),
  c('$not of an absent-key match holds', { $not: { data: { missing: 'x' } } }, true),
  c(
    '$not of mixed types holds (the inner never matches)',
    { data: { amount: { $not: { $eq: '120' } } } },
    true,
  ),
  c('$or at a nested level', { data: { currency: { $or: ['USD', 'EUR'] } } }, true),
  c('$or of operators at a nested level', { data: { amount: { $or: [{ $lt: 10 }, { $gt: 100 }] } } }, true),
  c('$and at a nested level', { data: { $and: [{ currency: 'EUR' }, { amount: { $gte: 100 } }] } }, true),
  c(
    '$or inside $and inside $not',
    {
      $not: { $and: [{ data: { paid: true } }, { $or: [{ type: 'x' }, { data: { amount: { $lt: 0 } } }] }] },
    },
    true,
  ),
  c(
    'combinators beside plain keys',
    { type: 'order.created', $or: [{ data: { currency: 'USD' } }, { data: { amount: { $gt: 100 } } }] },
    true,
  ),
  // The bench's filter and its half
  c(
    'three clauses, all hold',
    { type: 'order.created', data: { currency: 'EUR', amount: { $gte: 100 } } },
    true,
  ),
  c(
    'three clauses, one fails',
    { type: 'order.created', data: { currency: 'EUR', amount: { $gte: 500 } } },
    false,
  ),
  // Other payload shapes
  c('a payload that is a string', { a: 1 }, false, 'text'),
  c('a payload that is null', { a: { $exist: false } }, true, null),
  c('keys with dots are keys, not paths', { 'a.b': 1 }, true, { 'a.b': 1, a: { b: 2 } }),
  c('dots do not descend', { 'a.b': 2 }, false, { 'a.b': 1, a: { b: 2 } }),
  c(
    'a key named __proto__',
    { __proto__x: 1, ['__proto__']: { p: 1 } },
    true,
    JSON.parse('{"__proto__x":1,"__proto__":{"p":1}}'),
  ),
  c('unicode keys and values', { ключ: 'значение' }, true, { ключ: 'значение' }),
];
