/**
 * Dead letters: the analysis per endpoint (pattern and advice), the list with one-click replay,
 * and the bulk replay with a dry-run preview of how many match.
 */
import { actionButton, field, h, replace, section, table } from './dom.js';
import { badge, count, time } from './format.js';

const enc = encodeURIComponent;
const SETTLED = new Set(['delivered', 'dead_letter', 'cancelled']);

/** Follows one replayed delivery until it settles, showing its status in `cell`. */
export async function followDelivery(ctx, id, cell) {
  const deadline = Date.now() + 120_000;
  while (cell.isConnected && Date.now() < deadline) {
    const d = await ctx.api.get(`/v1/deliveries/${enc(id)}`);
    replace(cell, badge(d.status));
    cell.dataset.status = d.status;
    if (SETTLED.has(d.status)) return d.status;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return undefined;
}

/**
 * The Replay button of one delivery; its status shows in `statusCell` until it settles, then
 * `onSettled` runs (the delivery page re-renders to show the new attempts).
 */
export function replayButton(ctx, d, statusCell, onSettled) {
  return actionButton(
    'Replay',
    async (button) => {
      await ctx.run(async () => {
        await ctx.api.post(`/v1/deliveries/${enc(d.id)}/replay`);
        button.dataset.done = '1';
        button.textContent = 'Replayed';
        ctx.notify(`${d.id} queued again.`);
        const settled = await followDelivery(ctx, d.id, statusCell);
        if (settled && onSettled) await onSettled(settled);
      });
    },
    { 'aria-label': `Replay ${d.id}` },
  );
}

function analysisTable(rows) {
  return table(
    'Dead-letter analysis',
    [
      {
        label: 'Endpoint',
        value: (r) => h('a', { href: `#/endpoints/${enc(r.endpoint_id)}` }, r.endpoint_id),
        class: 'id',
      },
      { label: 'Dead', value: (r) => count(r.dead_count), class: 'num' },
      { label: 'Pattern', value: (r) => badge(r.pattern) },
      { label: 'Advice', value: (r) => r.advice, class: 'wrap' },
      { label: 'Primary error', value: (r) => r.primary_error ?? '–' },
      { label: 'Status', value: (r) => r.primary_status_code ?? '–', class: 'num' },
      { label: 'Avg attempts', value: (r) => r.avg_attempts, class: 'num' },
      { label: 'First', value: (r) => time(r.first_dead_at) },
      { label: 'Last', value: (r) => time(r.last_dead_at) },
    ],
    rows,
    'No dead letters in the last 24 hours.',
  );
}

function deadLetterTable(ctx, rows) {
  // Each row's status cell, so that row's Replay button can show the replay's progress in it.
  const statusCells = new Map();
  return table(
    'Dead letters',
    [
      { label: 'Delivery', value: (d) => h('a', { href: `#/deliveries/${enc(d.id)}` }, d.id), class: 'id' },
      ...(rows.some((d) => d.tenant_id !== undefined)
        ? [{ label: 'Tenant', value: (d) => d.tenant_id ?? '–' }]
        : []),
      {
        label: 'Endpoint',
        value: (d) => h('a', { href: `#/endpoints/${enc(d.endpoint_id)}` }, d.endpoint_id),
        class: 'id',
      },
      { label: 'Event type', value: (d) => d.event_type },
      { label: 'Attempts', value: (d) => count(d.attempt_count), class: 'num' },
      { label: 'Last error', value: (d) => [d.last_status_code ?? '', ' ', d.last_error_class ?? ''] },
      { label: 'Dead at', value: (d) => time(d.dead_at) },
      {
        label: 'Status',
        value: (d) => {
          const cell = h('span', { class: 'status', 'data-status': d.status }, badge(d.status));
          statusCells.set(d.id, cell);
          return cell;
        },
      },
      { label: 'Action', value: (d) => replayButton(ctx, d, statusCells.get(d.id)) },
    ],
    rows,
    'No dead letters.',
  );
}

/** "2026-12-01T10:00" from a datetime-local input → ISO with the browser's zone, or undefined. */
export function localToIso(value) {
  return value ? new Date(value).toISOString() : undefined;
}

function bulkReplayForm(ctx, endpointId) {
  const inputs = {
    endpoint_id: h('input', { value: endpointId ?? '', placeholder: 'ep_…' }),
    since: h('input', { type: 'datetime-local' }),
    until: h('input', { type: 'datetime-local' }),
    error_class: h('input', { placeholder: 'e.g. http_503, timeout' }),
    status_code: h('input', { type: 'number', min: 100, max: 599, inputmode: 'numeric' }),
    limit: h('input', { type: 'number', min: 1, inputmode: 'numeric' }),
  };
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  let previewed = null;
  const filter = () => ({
    endpoint_id: inputs.endpoint_id.value.trim() || undefined,
    since: localToIso(inputs.since.value),
    until: localToIso(inputs.until.value),
    error_class: inputs.error_class.value.trim() || undefined,
    status_code: inputs.status_code.value ? Number(inputs.status_code.value) : undefined,
    limit: inputs.limit.value ? Number(inputs.limit.value) : undefined,
  });
  const replayAll = actionButton('Replay matching', async () => {
    await ctx.run(async () => {
      const started = await ctx.api.post('/v1/dead-letters/replay', filter());
      result.textContent = `Replaying ${count(started.matched)}: ${count(started.replayed)} queued so far.`;
      let audit = started;
      while (audit.state === 'running' && result.isConnected) {
        await new Promise((r) => setTimeout(r, 1000));
        audit = await ctx.api.get(`/v1/dead-letters/replays/${enc(started.audit_id)}`);
        result.textContent = `Replaying ${count(audit.matched)}: ${count(audit.replayed)} queued.`;
      }
      result.textContent = `Replay ${audit.state ?? 'finished'}: ${count(audit.replayed)} of ${count(audit.matched)} queued, ${count(audit.skipped)} skipped.`;
    });
  });
  replayAll.disabled = true;
  const preview = actionButton('Preview (dry run)', async () => {
    await ctx.run(async () => {
      const r = await ctx.api.post('/v1/dead-letters/replay', { ...filter(), dry_run: true });
      previewed = JSON.stringify(filter());
      result.textContent = `${count(r.matched)} dead letter${r.matched === 1 ? '' : 's'} match${r.matched === 1 ? 'es' : ''}${r.skipped ? ` (${r.skipped} cannot be replayed)` : ''}.`;
      result.dataset.matched = String(r.matched);
      replayAll.disabled = r.matched === 0;
    });
  });
  const form = h(
    'form',
    { class: 'filters', onsubmit: (e) => e.preventDefault() },
    field('Endpoint id', inputs.endpoint_id),
    field('Dead since', inputs.since),
    field('Dead until', inputs.until),
    field('Error class', inputs.error_class),
    field('Status code', inputs.status_code),
    field('At most', inputs.limit),
    h('p', { class: 'actions' }, preview, replayAll),
    result,
  );
  // A changed filter needs a fresh preview before a real replay.
  form.addEventListener('input', () => {
    if (previewed !== JSON.stringify(filter())) replayAll.disabled = true;
  });
  return form;
}

export async function deadLettersView(ctx, view, query) {
  const endpointId = query.get('endpoint_id') ?? undefined;
  const [analysis, list] = await Promise.all([
    ctx.api.get('/v1/dead-letters/analysis', { hours: 24, endpoint_id: endpointId }),
    ctx.api.get('/v1/deliveries', { status: 'dead_letter', endpoint_id: endpointId, limit: 50 }),
  ]);
  replace(
    view,
    h('h1', { tabindex: '-1' }, endpointId ? `Dead letters of ${endpointId}` : 'Dead letters'),
    section('Analysis, last 24 hours', analysisTable(analysis.endpoints)),
    section('Newest dead letters', deadLetterTable(ctx, list.data)),
    section('Bulk replay', bulkReplayForm(ctx, endpointId)),
  );
}
