/** The pipeline at a glance: GET /v1/pipeline, refreshed every few seconds. */
import { h, replace, section } from './dom.js';
import { count, ms, seconds } from './format.js';

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
];

export const REFRESH_MS = 3000;

/** Renders into `view`; ctx.every() stops the refresh when the person navigates away. */
export async function pipelineView(ctx, view) {
  const grid = h('dl', { class: 'figures' });
  const updated = h('p', { class: 'muted' });
  replace(view, h('h1', { tabindex: '-1' }, 'Pipeline'), section('At a glance', grid, updated));
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
    }
    updated.textContent = `Updated ${new Date().toLocaleTimeString('en-GB')}, every ${REFRESH_MS / 1000} s.`;
  }
  await refresh();
  ctx.every(refresh, REFRESH_MS);
}
