/**
 * Unit tests for the alert rules in promtool's format: synthetic series in, which alerts fire
 * out. Two processes ("api", "dispatcher") report the same database gauges, so the cases also
 * prove that the rules take the max of those, never the sum.
 */

interface AlertCase {
  name: string;
  series: Record<string, string>;
  evalTime: string;
  /** alertname → the labels of each alert expected to fire (besides alertname). */
  expect: Record<string, Record<string, string>[]>;
}

const both = (series: string, values: string) => ({
  [series.replace('}', ',instance="api"}')]: values,
  [series.replace('}', ',instance="dispatcher"}')]: values,
});

const attempts = (success: string, retryable: string) => ({
  'hookpost_delivery_attempts_total{outcome="success",instance="dispatcher"}': success,
  'hookpost_delivery_attempts_total{outcome="retryable",instance="dispatcher"}': retryable,
});

const warning = [{ severity: 'warning' }];
const critical = [{ severity: 'critical' }];

export const ALERT_CASES: AlertCase[] = [
  {
    name: 'queue of 6000 reported by two processes is 6000, not 12000',
    series: { ...both('hookpost_queue_depth{status="pending"}', '6000x10') },
    evalTime: '7m',
    expect: { HookpostQueueDepthHigh: warning, HookpostQueueDepthCritical: [] },
  },
  {
    name: 'queue of 8500 across statuses',
    series: {
      ...both('hookpost_queue_depth{status="pending"}', '5000x10'),
      ...both('hookpost_queue_depth{status="failed"}', '3500x10'),
    },
    evalTime: '7m',
    expect: { HookpostQueueDepthHigh: warning, HookpostQueueDepthCritical: critical },
  },
  {
    name: 'queue of 4000 is fine',
    series: { ...both('hookpost_queue_depth{status="pending"}', '4000x10') },
    evalTime: '7m',
    expect: { HookpostQueueDepthHigh: [], HookpostQueueDepthCritical: [] },
  },
  {
    name: '97 % success',
    series: attempts('0+97x15', '0+3x15'),
    evalTime: '8m',
    expect: { HookpostSuccessRateLow: warning, HookpostSuccessRateCritical: [] },
  },
  {
    name: '90 % success',
    series: attempts('0+90x15', '0+10x15'),
    evalTime: '8m',
    expect: { HookpostSuccessRateLow: warning, HookpostSuccessRateCritical: critical },
  },
  {
    name: '67 % success on 15 attempts in 5 minutes is too few to judge',
    series: attempts('0+2x15', '0+1x15'),
    evalTime: '8m',
    expect: { HookpostSuccessRateLow: [], HookpostSuccessRateCritical: [] },
  },
  {
    name: 'all attempts succeed',
    series: attempts('0+100x15', '0x15'),
    evalTime: '8m',
    expect: { HookpostSuccessRateLow: [], HookpostSuccessRateCritical: [] },
  },
  {
    name: 'oldest pending 31 minutes',
    series: { ...both('hookpost_oldest_pending_age_seconds{}', '1860+60x10') },
    evalTime: '7m',
    expect: { HookpostOldestPendingTooOld: warning },
  },
  {
    name: 'oldest pending 28 minutes',
    series: { ...both('hookpost_oldest_pending_age_seconds{}', '1680x10') },
    evalTime: '7m',
    expect: { HookpostOldestPendingTooOld: [] },
  },
  {
    name: 'one endpoint with a p95 of 2.5 s, one with 0.3 s',
    series: {
      ...both('hookpost_endpoint_latency_p95_seconds{endpoint="ep_slow"}', '2.5x15'),
      ...both('hookpost_endpoint_latency_p95_seconds{endpoint="ep_fast"}', '0.3x15'),
    },
    evalTime: '12m',
    expect: { HookpostEndpointSlow: [{ severity: 'warning', endpoint: 'ep_slow' }] },
  },
  {
    name: '60 dead letters an hour',
    series: { 'hookpost_dead_letters_total{instance="dispatcher"}': '0+1x90' },
    evalTime: '80m',
    expect: { HookpostDeadLettersRising: warning, HookpostDeadLettersRisingFast: critical },
  },
  {
    name: '15 dead letters an hour',
    series: { 'hookpost_dead_letters_total{instance="dispatcher"}': '0+0.25x90' },
    evalTime: '80m',
    expect: { HookpostDeadLettersRising: warning, HookpostDeadLettersRisingFast: [] },
  },
  {
    name: '6 dead letters an hour',
    series: { 'hookpost_dead_letters_total{instance="dispatcher"}': '0+0.1x90' },
    evalTime: '80m',
    expect: { HookpostDeadLettersRising: [], HookpostDeadLettersRisingFast: [] },
  },
  {
    name: 'the egress proxy refuses attempts for 10 minutes',
    series: { 'hookpost_egress_proxy_unavailable_total{instance="dispatcher"}': '0+30x20' },
    evalTime: '15m',
    expect: { HookpostEgressProxyUnavailable: critical },
  },
  {
    name: 'the egress proxy failed once, then works',
    series: {
      'hookpost_egress_proxy_unavailable_total{instance="dispatcher"}':
        '0 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3',
    },
    evalTime: '15m',
    expect: { HookpostEgressProxyUnavailable: [] },
  },
  {
    // Both dispatchers report the installation's last success from the database; it is 2 days old.
    name: 'no retention pass has succeeded for two days',
    series: { ...both('hookpost_retention_last_success_timestamp_seconds{}', '-172800x30') },
    evalTime: '20m',
    expect: { HookpostRetentionNotSucceeding: warning },
  },
  {
    name: 'a retention pass succeeded an hour ago',
    series: { ...both('hookpost_retention_last_success_timestamp_seconds{}', '-3600x30') },
    evalTime: '20m',
    expect: { HookpostRetentionNotSucceeding: [] },
  },
];

/** The promtool test file (JSON, which is YAML) for `ruleFile`. */
export function promtoolTestFile(ruleFile: string): string {
  return JSON.stringify({
    rule_files: [ruleFile],
    evaluation_interval: '1m',
    tests: ALERT_CASES.map((c) => ({
      name: c.name,
      interval: '1m',
      input_series: Object.entries(c.series).map(([series, values]) => ({
        series: series.replace('{}', '').replace('{,', '{'),
        values,
      })),
      alert_rule_test: Object.entries(c.expect).map(([alertname, alerts]) => ({
        eval_time: c.evalTime,
        alertname,
        exp_alerts: alerts.map((labels) => ({ exp_labels: labels })),
      })),
    })),
  });
}
