/**
 * Every dashboard and alert expression parses with the Prometheus project's own PromQL grammar
 * (@prometheus-io/lezer-promql, the parser behind the Prometheus web UI). Needs no Prometheus
 * binary, so a broken expression fails `npm test` on every machine; the real-Prometheus suite
 * (prometheus.test.ts) then checks that they also evaluate.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parser } from '@prometheus-io/lezer-promql';
import { alertExpressions, dashboardExpressions, substituteGrafanaVariables } from './dashboard.js';

/** The offset of the first syntax error in `expr`, or undefined when it parses cleanly. */
function syntaxErrorAt(expr: string): number | undefined {
  let at: number | undefined;
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError && at === undefined) at = node.from;
    },
  });
  return at;
}

function assertParses(where: string, expr: string): void {
  const at = syntaxErrorAt(expr);
  assert.equal(
    at,
    undefined,
    `${where}: PromQL syntax error at offset ${at}:\n  ${expr}\n  ${' '.repeat(at ?? 0)}^`,
  );
}

describe('PromQL syntax of the shipped dashboard and alert rules', () => {
  it('parses every dashboard panel expression (Grafana variables substituted)', () => {
    const exprs = dashboardExpressions();
    assert.ok(exprs.length >= 15, `found ${exprs.length} expressions`);
    for (const { where, expr } of exprs) assertParses(where, substituteGrafanaVariables(expr));
  });

  it('parses every alert rule expression', () => {
    const exprs = alertExpressions();
    assert.equal(exprs.length, 10);
    for (const { where, expr } of exprs) assertParses(where, expr);
  });

  it('detects a broken expression (the check is not vacuous)', () => {
    assert.equal(syntaxErrorAt('sum(rate(hookpost_dead_letters_total[1h])) > 10'), undefined);
    assert.notEqual(syntaxErrorAt('sum(rate(hookpost_dead_letters_total[1h]) > 10'), undefined);
    assert.notEqual(syntaxErrorAt('sum by (status) (hookpost_queue_depth) /'), undefined);
    assert.notEqual(syntaxErrorAt('rate(hookpost_delivery_attempts_total[5m'), undefined);
    // An unsubstituted Grafana variable is not PromQL either: substitution must come first.
    assert.notEqual(syntaxErrorAt('rate(hookpost_delivery_attempts_total[$__rate_interval])'), undefined);
    assert.throws(() => substituteGrafanaVariables('rate(x[$unknown])'), /unknown dashboard variable/);
    const broken = alertExpressions(
      'groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max(hookpost_queue_depth > 5000\n',
    );
    assert.notEqual(syntaxErrorAt(broken[0]!.expr), undefined);
  });
});
