/**
 * Dead letters: the analysis per endpoint (pattern and advice), the list with one-click replay,
 * and the bulk replay with a dry-run preview of how many match. Every action refreshes what it
 * changed: a replayed row stops being offered for replay and the analysis stops counting it.
 */
import { ApiError } from './api.js';
import { actionButton, field, h, replace, section, table } from './dom.js';
import { badge, count, time } from './format.js';
import { circuitsNote } from './waiting.js';

const enc = encodeURIComponent;
const SETTLED = new Set(['delivered', 'dead_letter', 'cancelled']);
const REPLAYABLE = new Set(['dead_letter', 'failed', 'delivered']);
/**
 * What a person reads instead of a Replay button for a delivery that waits: the API would accept
 * a failed one, but it would only wait again behind the same thing.
 */
const STILL_WAITING = {
  circuit_open: "waits for the endpoint's circuit: Retry now sends it",
  endpoint_disabled: 'endpoint disabled: enable it first',
  behind_ordering_key: 'waits for the delivery ahead of it (same ordering key)',
};
/** What a person reads instead of a Replay button that would answer 409. */
const NOT_REPLAYABLE = {
  pending: 'not attempted yet: nothing to replay',
  in_flight: 'being sent right now',
  cancelled: 'cancelled: its endpoint or tenant was deleted',
};

/**
 * Why POST /v1/deliveries/{id}/replay would refuse `d` (the API's own rules, deliveries/replay.ts)
 * or would only park it again (it waits behind its circuit, its disabled endpoint or its ordering
 * key), or null when a replay would send it. `endpoint`: the delivery's endpoint when known (null:
 * deleted or not visible; undefined: not looked up).
 */
export function replayBlocker(d, endpoint) {
  if (d.payload_expired) return 'payload erased: nothing left to send';
  if (d.parked && STILL_WAITING[d.parked]) return STILL_WAITING[d.parked];
  if (!REPLAYABLE.has(d.status)) return NOT_REPLAYABLE[d.status] ?? 'cannot be replayed';
  if (endpoint === null) return 'endpoint deleted';
  if (endpoint && !endpoint.enabled) return 'endpoint disabled: enable it first';
  return null;
}

/** The endpoints named by `ids`, each GET once; an unknown or unreadable one maps to null. */
export async function endpointsById(api, ids) {
  const unique = [...new Set(ids)];
  const found = await Promise.all(
    unique.map((id) =>
      api.get(`/v1/endpoints/${enc(id)}`).catch((error) => {
        if (error instanceof ApiError && (error.status === 404 || error.status === 403)) return null;
        throw error;
      }),
    ),
  );
  return new Map(unique.map((id, i) => [id, found[i]]));
}

/** An endpoint id linked to its page, with the URL (origin and path) and description under it. */
export function endpointLabel(id, url, description) {
  return [
    h('a', { href: `#/endpoints/${enc(id)}` }, id),
    url ? h('small', { class: 'url reason' }, url) : null,
    description ? h('small', { class: 'reason' }, description) : null,
  ];
}

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
 * The Replay button of one delivery, or why there is none (`blocker`: replayBlocker's answer).
 * Its status shows in `statusCell` until it settles; `onQueued` runs once the API accepted the
 * replay, `onSettled` once it settled (the views refresh what the replay changed).
 */
export function replayButton(ctx, d, statusCell, { blocker = null, onQueued, onSettled } = {}) {
  if (blocker) return h('small', { class: 'reason', dataset: { noReplay: d.id } }, blocker);
  return actionButton(
    'Replay',
    async (button) => {
      await ctx.run(async () => {
        await ctx.api.post(`/v1/deliveries/${enc(d.id)}/replay`);
        button.dataset.done = '1';
        button.textContent = 'Replayed';
        ctx.notify(`${d.id} queued again.`, 'info', button);
        await onQueued?.();
        const settled = await followDelivery(ctx, d.id, statusCell);
        if (settled && onSettled) await onSettled(settled);
      }, button);
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
        value: (r) => endpointLabel(r.endpoint_id, r.endpoint_url, r.endpoint_description),
        class: 'id',
      },
      { label: 'Dead', value: (r) => count(r.dead_count), class: 'num' },
      { label: 'Pattern', value: (r) => badge(r.pattern) },
      { label: 'Advice', value: (r) => r.advice, class: 'wrap advice' },
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

/**
 * The newest dead letters; each row offers Replay only when the API would accept it. `refresh`
 * shows the analysis and the list as they now are: the analysis once a replay is queued (it no
 * longer counts that row), both once it settled.
 */
function deadLetterTable(ctx, rows, endpoints, refresh) {
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
      {
        label: 'Action',
        value: (d) =>
          replayButton(ctx, d, statusCells.get(d.id), {
            blocker: replayBlocker(d, endpoints.get(d.endpoint_id)),
            onQueued: () => refresh({ analysisOnly: true }),
            onSettled: () => refresh(),
          }),
      },
    ],
    rows,
    'No dead letters.',
  );
}

/** "2026-12-01T10:00" from a datetime-local input → ISO with the browser's zone, or undefined. */
export function localToIso(value) {
  return value ? new Date(value).toISOString() : undefined;
}

/** `refresh` runs once the replay finished: the replayed rows leave the list and the analysis. */
function bulkReplayForm(ctx, endpointId, refresh) {
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
      const summary = `Replay ${audit.state ?? 'finished'}: ${count(audit.replayed)} of ${count(audit.matched)} queued, ${count(audit.skipped)} skipped`;
      // Replayed behind an open circuit they are parked, not sent: say so, and offer Retry now.
      const note = audit.replayed > 0 ? await circuitsNote(ctx, started.open_circuits) : null;
      replace(result, note ? [summary, note] : `${summary}.`);
      // Done: another run needs a fresh preview (`done` keeps actionButton from re-enabling it).
      previewed = null;
      replayAll.dataset.done = '1';
      await refresh();
    }, replayAll);
  });
  replayAll.disabled = true;
  const preview = actionButton('Preview (dry run)', async () => {
    await ctx.run(async () => {
      const r = await ctx.api.post('/v1/dead-letters/replay', { ...filter(), dry_run: true });
      previewed = JSON.stringify(filter());
      const summary = `${count(r.matched)} dead letter${r.matched === 1 ? '' : 's'} match${r.matched === 1 ? 'es' : ''}${r.skipped ? ` (${r.skipped} cannot be replayed)` : ''}`;
      const note = await circuitsNote(ctx, r.open_circuits, { whose: 'will' });
      replace(result, note ? [summary, note] : `${summary}.`);
      result.dataset.matched = String(r.matched);
      delete replayAll.dataset.done;
      replayAll.disabled = r.matched === 0;
    }, preview);
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
  const analysisHolder = h('div');
  const listHolder = h('div');
  async function refresh({ analysisOnly = false } = {}) {
    const [analysis, list] = await Promise.all([
      ctx.api.get('/v1/dead-letters/analysis', { hours: 24, endpoint_id: endpointId }),
      analysisOnly
        ? null
        : ctx.api.get('/v1/deliveries', { status: 'dead_letter', endpoint_id: endpointId, limit: 50 }),
    ]);
    replace(analysisHolder, analysisTable(analysis.endpoints));
    if (!list) return;
    const endpoints = await endpointsById(
      ctx.api,
      list.data.map((d) => d.endpoint_id),
    );
    replace(listHolder, deadLetterTable(ctx, list.data, endpoints, refresh));
  }
  replace(
    view,
    h('h1', { tabindex: '-1' }, endpointId ? `Dead letters of ${endpointId}` : 'Dead letters'),
    section('Analysis, last 24 hours', analysisHolder),
    section('Newest dead letters', listHolder),
    section('Bulk replay', bulkReplayForm(ctx, endpointId, refresh)),
  );
  await refresh();
}
