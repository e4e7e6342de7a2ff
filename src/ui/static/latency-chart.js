/** p50/p95/p99 over time with uPlot (served from hookpost's node_modules, 50 KB). */
import { h, replace } from './dom.js';

const SERIES = [
  ['p50', 'p50_ms', '#2f6fdf'],
  ['p95', 'p95_ms', '#d9822b'],
  ['p99', 'p99_ms', '#c23030'],
];

/** Draws `series` (GET /v1/endpoints/{id}/latency) into `el`, sized to its width. */
export function latencyChart(el, series) {
  if (series.points.length === 0) {
    replace(el, h('p', { class: 'empty' }, 'No attempts in the last 24 hours.'));
    return;
  }
  const xs = series.points.map((p) => Date.parse(p.at) / 1000);
  const data = [xs, ...SERIES.map(([, key]) => series.points.map((p) => p[key]))];
  const width = Math.max(280, el.clientWidth || 600);
  const now = Date.now() / 1000;
  replace(el);
  const opts = {
    width,
    height: 240,
    // The whole window, not just the minutes that had attempts: a quiet night shows as a gap.
    scales: { x: { time: true, range: () => [now - series.hours * 3600, now] } },
    axes: [{}, { label: 'ms', values: (_u, ticks) => ticks.map((t) => `${t}`) }],
    series: [
      {},
      ...SERIES.map(([label, , stroke]) => ({
        label,
        stroke,
        width: 2,
        spanGaps: false,
        points: { show: true, size: 4 },
      })),
    ],
  };
  // The IIFE build defines window.uPlot; it is loaded with `defer`, before module scripts run.
  const plot = new window.uPlot(opts, data, el);
  // Observing the element (not the window) ends with it: nothing to unregister on navigation.
  new ResizeObserver(() => {
    const now = Math.max(280, el.clientWidth);
    if (now !== plot.width) plot.setSize({ width: now, height: 240 });
  }).observe(el);
  // A table of the same figures for screen readers and for copying.
  el.append(
    h(
      'details',
      {},
      h(
        'summary',
        {},
        `Figures (${series.points.length} point${series.points.length === 1 ? '' : 's'} of ${series.step_minutes} min)`,
      ),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          {},
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Time', 'p50', 'p95', 'p99', 'attempts'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            series.points.map((p) =>
              h(
                'tr',
                {},
                [new Date(p.at).toLocaleString('en-GB'), p.p50_ms, p.p95_ms, p.p99_ms, p.sample_count].map(
                  (v) => h('td', {}, v ?? '–'),
                ),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}
