/**
 * The shipped dashboard and alert rules as data for the tests: every panel expression (rows'
 * nested panels included), every alert expression, and Grafana's variables substituted the way
 * a dashboard user with "All" selected would have them, so Prometheus or a PromQL parser can read
 * them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

export const DASHBOARDS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dashboards');

export interface Panel {
  title: string;
  type: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}

export interface Dashboard {
  templating: { list: { name: string; type: string; query: unknown }[] };
  panels: Panel[];
}

/** dashboards/hookpost.json, parsed. */
export function loadDashboard(): Dashboard {
  return JSON.parse(readFileSync(path.join(DASHBOARDS, 'hookpost.json'), 'utf8')) as Dashboard;
}

/** Every panel's query, collapsed rows' panels included. */
export function dashboardExpressions(dashboard = loadDashboard()): { where: string; expr: string }[] {
  const walk = (panels: Panel[]): { where: string; expr: string }[] =>
    panels.flatMap((p) => [
      ...(p.targets ?? []).map((t, i) => ({ where: `panel "${p.title}" query ${i}`, expr: t.expr })),
      ...walk(p.panels ?? []),
    ]);
  return walk(dashboard.panels);
}

/** Every rule's expression in dashboards/alerts.yml (or the given YAML text). */
export function alertExpressions(
  text = readFileSync(path.join(DASHBOARDS, 'alerts.yml'), 'utf8'),
): { where: string; expr: string }[] {
  const doc = parseYaml(text) as {
    groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  return doc.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record} (group ${g.name})`, expr: String(r.expr) })),
  );
}

const GRAFANA_VALUES: Record<string, string> = {
  __rate_interval: '30s',
  __interval: '5s',
  __range: '5m',
  endpoint: '.*',
  job: '.*',
};

/** Grafana's variables replaced by values a user with "All" selected would have; unknown ones throw. */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string, bare: string) => {
    const replacement = GRAFANA_VALUES[braced ?? bare];
    if (replacement === undefined) throw new Error(`unknown dashboard variable ${whole} in ${expr}`);
    return replacement;
  });
}
