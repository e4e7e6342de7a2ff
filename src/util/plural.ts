/**
 * A count with its noun in agreement: `plural(1, 'point')` is "1 point", `plural(3, 'point')`
 * "3 points", `plural(2, 'delivery', 'deliveries')` "2 deliveries". Messages a person reads
 * (API errors, CLI output) use it rather than a bare `${n} points`.
 */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}
