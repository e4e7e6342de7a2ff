/**
 * Delivery search (the filters GET /v1/deliveries declares in /openapi.json, so a filter added to
 * the route appears here by itself) and one delivery's page with every attempt and its replays.
 */
import { listFilters } from './api.js';
import { actionButton, field, h, replace, section, table } from './dom.js';
import { badge, count, ms, time } from './format.js';
import {
  endpointsById,
  followDelivery,
  localToIso,
  replayBlocker,
  replayButton,
} from './views-dead-letters.js';
import { waitingReason, waitingShort } from './waiting.js';

const enc = encodeURIComponent;
const LABELS = {
  status: 'Status',
  endpoint_id: 'Endpoint id',
  tenant_id: 'Tenant',
  event_type: 'Event type',
  message_id: 'Message id',
  since: 'Created since',
  until: 'Created until',
};
const TIME_FILTERS = new Set(['since', 'until']);

function isoToLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** One control per declared filter: a select for an enum, a date-time picker for since/until. */
function filterControl(param, value) {
  const options = param.schema?.enum;
  if (options) {
    return h(
      'select',
      { name: param.name },
      h('option', { value: '' }, 'any'),
      options.map((o) => h('option', { value: o, selected: o === value }, o.replace(/_/g, ' '))),
    );
  }
  if (TIME_FILTERS.has(param.name)) {
    return h('input', { name: param.name, type: 'datetime-local', value: isoToLocal(value) });
  }
  return h('input', { name: param.name, value: value ?? '' });
}

/** `withTenant`: a Tenant column, once the API returns tenant_id. */
export function deliveryColumns(withTenant = false) {
  return [
    { label: 'Delivery', value: (d) => h('a', { href: `#/deliveries/${enc(d.id)}` }, d.id), class: 'id' },
    ...(withTenant ? [{ label: 'Tenant', value: (d) => d.tenant_id ?? '–' }] : []),
    { label: 'Message', value: (d) => d.message_id, class: 'id' },
    {
      label: 'Endpoint',
      value: (d) => h('a', { href: `#/endpoints/${enc(d.endpoint_id)}` }, d.endpoint_id),
      class: 'id',
    },
    { label: 'Event type', value: (d) => d.event_type },
    { label: 'Status', value: (d) => [badge(d.status), waitingShort(d)] },
    { label: 'Attempts', value: (d) => count(d.attempt_count), class: 'num' },
    { label: 'Last', value: (d) => [d.last_status_code ?? '', ' ', d.last_error_class ?? ''] },
    { label: 'Created', value: (d) => time(d.created_at) },
  ];
}

export async function deliveriesView(ctx, view, query) {
  // A page may hide filters that mean nothing to it (the portal: tenant_id, its key's own).
  const hidden = new Set(ctx.hiddenFilters ?? []);
  const filters = (await listFilters('/v1/deliveries')).filter((p) => !hidden.has(p.name));
  const idInput = h('input', { name: 'id', placeholder: 'dlv_…', value: '' });
  const controls = filters.map((p) => ({ param: p, control: filterControl(p, query.get(p.name)) }));
  const results = h('div');
  const form = h(
    'form',
    { class: 'filters', role: 'search' },
    field('Delivery id', idInput, 'opens that delivery'),
    controls.map(({ param, control }) => field(LABELS[param.name] ?? param.name, control, param.description)),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Search')),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = idInput.value.trim();
    if (id) return ctx.navigate(`#/deliveries/${enc(id)}`);
    const params = new URLSearchParams();
    for (const { param, control } of controls) {
      const value = TIME_FILTERS.has(param.name) ? localToIso(control.value) : control.value.trim();
      if (value) params.set(param.name, value);
    }
    ctx.navigate(`#/deliveries?${params}`);
  });
  replace(
    view,
    h('h1', { tabindex: '-1' }, 'Deliveries'),
    section('Search', form),
    section('Results', results),
  );

  const apiQuery = Object.fromEntries(filters.map((p) => [p.name, query.get(p.name) ?? undefined]));
  const rows = [];
  async function more(cursor) {
    const page = await ctx.api.get('/v1/deliveries', { ...apiQuery, limit: 50, cursor });
    rows.push(...page.data);
    const next = page.next_cursor
      ? actionButton('Older', () => ctx.run(() => more(page.next_cursor)), { class: 'secondary' })
      : null;
    const withTenant = !ctx.singleTenant && rows.some((d) => d.tenant_id !== undefined);
    replace(results, table('Deliveries', deliveryColumns(withTenant), rows, 'No delivery matches.'), next);
  }
  await more(undefined);
}

function attemptsTable(attempts) {
  return table(
    'Attempts',
    [
      { label: '#', value: (a) => a.attempt, class: 'num' },
      { label: 'Started', value: (a) => time(a.started_at) },
      { label: 'Duration', value: (a) => ms(a.duration_ms), class: 'num' },
      { label: 'Status code', value: (a) => a.status_code ?? '–', class: 'num' },
      { label: 'Outcome', value: (a) => badge(a.outcome) },
      { label: 'Error class', value: (a) => a.error_class ?? '–' },
      { label: 'Error', value: (a) => a.error ?? '–', class: 'wrap' },
      {
        label: 'Response',
        value: (a) => (a.response_snippet ? h('code', { class: 'snippet' }, a.response_snippet) : '–'),
        class: 'wrap',
      },
    ],
    attempts,
    'No attempt yet.',
  );
}

function replaysTable(replays) {
  return table(
    'Replays',
    [
      { label: 'When', value: (r) => time(r.replayed_at) },
      { label: 'By', value: (r) => r.actor },
      { label: 'Was', value: (r) => badge(r.previous_status) },
      { label: 'Attempts before', value: (r) => count(r.previous_attempt_count), class: 'num' },
      { label: 'Audit', value: (r) => r.audit_id },
    ],
    replays,
    'Never replayed.',
  );
}

export async function deliveryView(ctx, view, id) {
  const d = await ctx.api.get(`/v1/deliveries/${enc(id)}`);
  const endpoint = (await endpointsById(ctx.api, [d.endpoint_id])).get(d.endpoint_id);
  const status = h('span', { class: 'status', 'data-status': d.status }, badge(d.status));
  const rerender = () => (view.isConnected ? deliveryView(ctx, view, id) : undefined);
  // Queued: why it waits and until when, instead of a bare (and, when parked, empty) next attempt.
  const waiting = waitingReason(ctx, d, endpoint, async () => {
    await rerender();
    return view.querySelector('.status');
  });
  const pairs = [
    ['Status', status],
    ['Message', d.message_id],
    ...(d.tenant_id !== undefined ? [['Tenant', d.tenant_id]] : []),
    ['Endpoint', h('a', { href: `#/endpoints/${enc(d.endpoint_id)}` }, d.endpoint_id)],
    ['Event type', d.event_type],
    ['Event id', d.event_id ?? '–'],
    ...(d.ordering_key ? [['Ordering key', `${d.ordering_key} (#${d.sequence})`]] : []),
    ['Attempts', count(d.attempt_count)],
    ...(waiting ? [['Why it waits', waiting]] : []),
    ['Created', time(d.created_at)],
    ['Delivered', time(d.delivered_at)],
    ['Dead-lettered', time(d.dead_at)],
  ];
  const replay = replayButton(ctx, d, status, { blocker: replayBlocker(d, endpoint), onSettled: rerender });
  const refresh = actionButton('Refresh', () => ctx.run(() => deliveryView(ctx, view, id)), {
    class: 'secondary',
  });
  replace(
    view,
    h('h1', { tabindex: '-1' }, `Delivery ${d.id}`),
    section(
      'Delivery',
      h(
        'dl',
        { class: 'pairs' },
        pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      ),
      h('p', { class: 'actions' }, replay, refresh),
    ),
    section(`Attempts (${d.attempts.length})`, attemptsTable(d.attempts)),
    section(`Replays (${d.replays.length})`, replaysTable(d.replays)),
    section('Payload', h('pre', { class: 'payload' }, JSON.stringify(d.payload, null, 2))),
  );
  // A delivery still on its way: keep the page current until it settles.
  if (!['delivered', 'dead_letter', 'cancelled'].includes(d.status)) {
    followDelivery(ctx, d.id, status).then(
      (settled) => {
        if (settled && location.hash === `#/deliveries/${enc(id)}`) rerender();
      },
      () => {},
    );
  }
}
