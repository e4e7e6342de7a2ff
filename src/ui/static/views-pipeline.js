/** The pipeline at a glance: GET /v1/pipeline, refreshed every few seconds. */
import { h, replace, section, table } from './dom.js';
import { badge, count, ms, seconds, time } from './format.js';
import { endpointLabel } from './views-dead-letters.js';

const FIGURES = [
  ['pending', 'Pending', count],
  ['awaiting_retry', 'Awaiting retry', count],
  ['in_flight', 'In flight', count],
  ['dead_letter', 'Dead letters', count],
  ['delivered_last_hour', 'Delivered, last hour', count],
  ['failed_last_hour', 'Failed attempts, last hour', count],
  ['oldest_pending_age_seconds', 'Oldest pending', seconds],
  ['avg_delivery_ms_last_hour', 'Avg delivery, last hour', ms],
  ['open_circuits', 'Open circuits', count],
  // Accepted events that no endpoint subscribes to: delivered nowhere (not an error by itself).
  ['unrouted_last_hour', 'Unrouted events, last hour', count],
];

export const REFRESH_MS = 3000;
/** The analysis reads a day of dead letters: refreshed less often than the counters. */
const ATTENTION_REFRESH_MS = 30_000;
const enc = encodeURIComponent;

/** Renders into `view`; ctx.every() stops the refresh when the person navigates away. */
export async function pipelineView(ctx, view) {
  const grid = h('dl', { class: 'figures' });
  const updated = h('p', { class: 'muted' });
  const dead = h('div');
  const slow = h('div');
  replace(
    view,
    h('h1', { tabindex: '-1' }, 'Pipeline'),
    section('At a glance', grid, updated),
    section('Dead letters by endpoint, last 24 hours', dead),
    section('Slow endpoints (p95 over 2 s, 24 h)', slow),
  );
  const cells = new Map();
  for (const [key, label] of FIGURES) {
    const value = h('dd', { 'data-metric': key }, '…');
    cells.set(key, value);
    grid.append(h('div', { class: 'figure' }, h('dt', {}, label), value));
  }
  async function refresh() {
    const p = await ctx.api.get('/v1/pipeline');
    for (const [key, , format] of FIGURES) {
      const cell = cells.get(key);
      cell.textContent = format(p[key]);
      cell.dataset.value = String(p[key] ?? '');
      cell.classList.toggle('alert', (key === 'dead_letter' || key === 'open_circuits') && p[key] > 0);
      cell.classList.toggle('notable', key === 'unrouted_last_hour' && p[key] > 0);
    }
    updated.textContent = `Updated ${new Date().toLocaleTimeString('en-GB')}, every ${REFRESH_MS / 1000} s.`;
  }
  async function attention() {
    const [analysis, slowest] = await Promise.all([
      ctx.api.get('/v1/dead-letters/analysis', { hours: 24, limit: 5 }),
      ctx.api.get('/v1/endpoints/slow', { p95_ms: 2000 }),
    ]);
    const link = (id, hash) => h('a', { href: `#/${hash}/${enc(id)}` }, id);
    replace(
      dead,
      table(
        'Dead letters by endpoint',
        [
          {
            label: 'Endpoint',
            value: (r) => endpointLabel(r.endpoint_id, r.endpoint_url, r.endpoint_description),
            class: 'id',
          },
          { label: 'Dead', value: (r) => count(r.dead_count), class: 'num' },
          { label: 'Pattern', value: (r) => badge(r.pattern) },
          { label: 'Advice', value: (r) => r.advice, class: 'wrap advice' },
          { label: 'Last', value: (r) => time(r.last_dead_at) },
        ],
        analysis.endpoints,
        'No dead letters in the last 24 hours.',
      ),
      analysis.endpoints.length ? h('p', {}, h('a', { href: '#/dead-letters' }, 'All dead letters')) : null,
    );
    replace(
      slow,
      table(
        'Slow endpoints',
        [
          { label: 'Endpoint', value: (r) => link(r.endpoint_id, 'endpoints'), class: 'id' },
          { label: 'URL', value: (r) => h('span', { class: 'url' }, r.url), class: 'wrap' },
          { label: 'p50', value: (r) => ms(r.p50_ms), class: 'num' },
          { label: 'p95', value: (r) => ms(r.p95_ms), class: 'num' },
          { label: 'p99', value: (r) => ms(r.p99_ms), class: 'num' },
        ],
        slowest.data,
        'No endpoint is slow.',
      ),
    );
  }
  await Promise.all([refresh(), attention()]);
  ctx.every(refresh, REFRESH_MS);
  ctx.every(attention, ATTENTION_REFRESH_MS);
}
