/**
 * A strict parser for the Prometheus text exposition format (version 0.0.4), written for the
 * tests so that "/metrics parses" means something: every line must be a HELP, TYPE, comment or
 * a sample of a declared family, names and label names must be valid, values must be numbers,
 * and no series may appear twice.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one series with exactly these labels; undefined when there is none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Every series of `name`, whatever its labels. */
  series(name: string): Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/** Values as Prometheus reads them (Go's ParseFloat): NaN and Inf in any letter case. */
function parseValue(text: string, line: string): number {
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (/^[+]?inf(inity)?$/.test(lower)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/.test(lower)) return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value in: ${line}`);
  return Number(text);
}

/** Reads `{a="x",b="y"}` starting at `start` (the `{`); returns the labels and the index after `}`. */
function parseLabels(line: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (line[i] !== '}') {
    const eq = line.indexOf('=', i);
    if (eq < 0 || line[eq + 1] !== '"') throw new Error(`bad label in: ${line}`);
    const name = line.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name ${name} in: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] !== '\\') {
        value += line[j];
        continue;
      }
      j++;
      const escaped = line[j];
      if (escaped === 'n') value += '\n';
      else if (escaped === '\\' || escaped === '"') value += escaped;
      else throw new Error(`bad escape in: ${line}`);
    }
    if (j >= line.length) throw new Error(`unterminated label value in: ${line}`);
    if (name in labels) throw new Error(`duplicate label ${name} in: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (line[i] === ',') i++;
    else if (line[i] !== '}') throw new Error(`expected , or } in: ${line}`);
  }
  return { labels, end: i + 1 };
}

function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const [family, type] of types) {
    for (const suffix of SUFFIXES[type] ?? []) if (name === family + suffix) return family;
  }
  return undefined;
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v);

/** Parses a whole exposition; throws on the first line that breaks the format. */
export function parsePrometheusText(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const [, keyword, name, rest] = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line) ?? [];
      if (!keyword) continue; // a plain comment
      if (!METRIC_NAME.test(name!)) throw new Error(`bad metric name in: ${line}`);
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest!)) throw new Error(`unknown type in: ${line}`);
        if (types.has(name!)) throw new Error(`TYPE given twice for ${name}`);
        types.set(name!, rest!);
      }
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`bad sample line: ${line}`);
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (line[nameEnd] === '{') {
      const parsed = parseLabels(line, nameEnd);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const parts = rest.trim().split(' ');
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2) throw new Error(`bad sample: ${line}`);
    if (!familyOf(name, types)) throw new Error(`sample of an undeclared family: ${line}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`series appears twice: ${line}`);
    seen.add(key);
    samples.push({ name, labels, value: parseValue(parts[0]!, line) });
  }
  return {
    types,
    samples,
    value(name, labels = {}) {
      const matches = samples.filter((s) => s.name === name && sameLabels(s.labels, labels));
      if (matches.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches several series`);
      return matches[0]?.value;
    },
    series: (name) => samples.filter((s) => s.name === name),
  };
}
