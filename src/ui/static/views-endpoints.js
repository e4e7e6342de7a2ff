/**
 * Endpoints with their health (circuit, failure streak, latency percentiles, disabled reason),
 * enable/disable, and one endpoint's page with its 24 h latency chart.
 */
import { actionButton, field, h, replace, section, table } from './dom.js';
import { badge, count, ms, time } from './format.js';
import { latencyChart } from './latency-chart.js';
import { resendSection } from './views-resend.js';

const enc = encodeURIComponent;

/** Fetches every endpoint (following cursors, up to `max`) with its health; `tenantId` filters. */
export async function endpointsWithHealth(api, max = 500, tenantId = undefined) {
  const endpoints = [];
  let cursor;
  do {
    const page = await api.get('/v1/endpoints', { limit: 100, cursor, tenant_id: tenantId });
    endpoints.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor && endpoints.length < max);
  const health = await Promise.all(endpoints.map((e) => api.get(`/v1/endpoints/${enc(e.id)}/health`)));
  // By tenant, then newest first: a tenant's endpoints stay together.
  return endpoints
    .map((e, i) => ({ ...e, health: health[i] }))
    .sort((a, b) => (a.tenant_id ?? '').localeCompare(b.tenant_id ?? ''));
}

function enabledCell(e) {
  if (e.enabled) return badge('enabled');
  return h(
    'span',
    {},
    badge('disabled'),
    e.disabled_reason ? h('small', { class: 'reason' }, e.disabled_reason) : null,
  );
}

/** The enable/disable button; `done` re-renders after the change. */
export function toggleButton(ctx, e, done) {
  const label = e.enabled ? 'Disable' : 'Enable';
  return actionButton(
    label,
    async () => {
      await ctx.run(async () => {
        await ctx.api.patch(`/v1/endpoints/${enc(e.id)}`, { enabled: !e.enabled });
        ctx.notify(`${e.id} ${e.enabled ? 'disabled' : 'enabled'}.`);
        await done();
      });
    },
    { class: e.enabled ? 'secondary' : '', 'aria-label': `${label} ${e.id}` },
  );
}

export function endpointColumns(ctx, rerender, withTenant) {
  return [
    { label: 'Endpoint', value: (e) => h('a', { href: `#/endpoints/${enc(e.id)}` }, e.id), class: 'id' },
    ...(withTenant ? [{ label: 'Tenant', value: (e) => e.tenant_id ?? '–' }] : []),
    {
      label: 'URL',
      value: (e) => [
        h('span', { class: 'url' }, e.url),
        e.description ? h('small', { class: 'reason' }, e.description) : null,
      ],
      class: 'wrap',
    },
    { label: 'Circuit', value: (e) => badge(e.health.state) },
    { label: 'Failure streak', value: (e) => count(e.health.consecutive_failures), class: 'num' },
    { label: 'p50', value: (e) => ms(e.health.p50_ms), class: 'num' },
    { label: 'p95', value: (e) => ms(e.health.p95_ms), class: 'num' },
    { label: 'p99', value: (e) => ms(e.health.p99_ms), class: 'num' },
    { label: 'State', value: enabledCell },
    { label: 'Action', value: (e) => toggleButton(ctx, e, rerender) },
  ];
}

/** ?tenant_id= in the hash narrows the list to one tenant (the API's own filter). */
export async function endpointsView(ctx, view, query) {
  const holder = h('div');
  const tenantId = query?.get('tenant_id') || undefined;
  const tenantInput = h('input', { name: 'tenant_id', value: tenantId ?? '', placeholder: 'any tenant' });
  const filter = h(
    'form',
    { class: 'filters', role: 'search' },
    field('Tenant', tenantInput),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Filter')),
  );
  filter.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = tenantInput.value.trim();
    ctx.navigate(value ? `#/endpoints?tenant_id=${enc(value)}` : '#/endpoints');
  });
  replace(
    view,
    h('h1', { tabindex: '-1' }, tenantId ? `Endpoints of ${tenantId}` : 'Endpoints'),
    section('Endpoints and their health', filter, holder),
  );
  async function render() {
    const rows = await endpointsWithHealth(ctx.api, 500, tenantId);
    const withTenant = !ctx.singleTenant && rows.some((e) => e.tenant_id !== undefined);
    replace(holder, table('Endpoints', endpointColumns(ctx, render, withTenant), rows, 'No endpoints yet.'));
  }
  await render();
}

function definitionList(pairs) {
  return h(
    'dl',
    { class: 'pairs' },
    pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
  );
}

/**
 * One endpoint: its settings, health, "resend since…" and latency chart. `extras(e, rerender)` adds
 * sections before the chart (the portal's edit, rotate, test and delete).
 */
export async function endpointView(ctx, view, id, extras = undefined) {
  const [e, health] = await Promise.all([
    ctx.api.get(`/v1/endpoints/${enc(id)}`),
    ctx.api.get(`/v1/endpoints/${enc(id)}/health`),
  ]);
  const chart = h('div', { class: 'chart', role: 'img', 'aria-label': `Latency of ${id} over 24 hours` });
  const rerender = () => endpointView(ctx, view, id, extras);
  replace(
    view,
    h('h1', { tabindex: '-1' }, `Endpoint ${e.id}`),
    section(
      'Endpoint',
      definitionList([
        ...(e.tenant_id !== undefined ? [['Tenant', e.tenant_id]] : []),
        ['URL', h('span', { class: 'url' }, e.url)],
        ['Description', e.description || '–'],
        ['Event types', e.event_types.length ? e.event_types.join(', ') : 'all'],
        ['State', enabledCell(e)],
        ['Created', time(e.created_at)],
      ]),
      h(
        'p',
        { class: 'actions' },
        toggleButton(ctx, e, rerender),
        h('a', { href: `#/deliveries?endpoint_id=${enc(e.id)}` }, 'Deliveries'),
        h('a', { href: `#/dead-letters?endpoint_id=${enc(e.id)}` }, 'Dead letters'),
      ),
    ),
    section(
      'Health',
      definitionList([
        ['Circuit', badge(health.state)],
        ['Failure streak', count(health.consecutive_failures)],
        ['Opened at', time(health.opened_at)],
        ['Failing since', time(health.failing_since)],
        ['Last success', time(health.last_success_at)],
        ['Last failure', time(health.last_failure_at)],
        ['p50 / p95 / p99 (24 h)', `${ms(health.p50_ms)} / ${ms(health.p95_ms)} / ${ms(health.p99_ms)}`],
        ['Samples (24 h)', count(health.sample_count)],
      ]),
    ),
    resendSection(ctx, e.id),
    extras ? extras(e, rerender) : null,
    section('Latency, last 24 hours', chart),
  );
  const series = await ctx.api.get(`/v1/endpoints/${enc(id)}/latency`, { hours: 24 });
  latencyChart(chart, series);
}
