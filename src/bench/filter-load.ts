/**
 * The events and filters the filter benchmarks use (`bench --filters`, `bench --filter-cost`):
 * order events of a given size and a three-clause filter that half of them match.
 */

/**
 * Event `index` as JSON text of about `bytes` bytes: every event is an `order.created`, three in
 * four are in EUR, and the amounts (0-999) are spread so that two in three are at least 333.
 */
export function orderEventOf(index: number, bytes: number): string {
  const currency = index % 4 === 3 ? 'USD' : 'EUR';
  const amount = (index * 7919) % 1000;
  const head =
    `{"type":"order.created","n":${index},"data":{"currency":"${currency}","amount":${amount},` +
    `"customer":{"id":"cus_${index % 100}","country":"DE"},"items":[{"sku":"A","qty":1}]},"pad":"`;
  return `${head}${'x'.repeat(Math.max(0, bytes - head.length - 2))}"}`;
}

/** Three clauses (type, currency, amount): 3/4 × 2/3 = half of the events match. */
export const HALF_FILTER = {
  type: 'order.created',
  data: { currency: 'EUR', amount: { $gte: 333 } },
} as const;

/** Whether event `index` matches HALF_FILTER: the bench checks the receiver got exactly these. */
export function matchesHalf(index: number): boolean {
  return index % 4 !== 3 && (index * 7919) % 1000 >= 333;
}
