/**
 * Endpoints with their health (circuit, failure streak, latency percentiles, disabled reason),
 * creating one, and one endpoint's page: its settings and editor, health, test event, secret
 * rotation, resend, delete and 24 h latency chart. The admin page and the portal share all of it
 * (the portal passes its own title and hides the tenant filter through ctx.singleTenant).
 */
import { field, h, replace, section, table } from './dom.js';
import { deleteSection, secretSection, testSection, toggleButton } from './endpoint-actions.js';
import { endpointEditor, revealCreated } from './endpoint-editor.js';
import { catalog } from './endpoint-fields.js';
import { badge, count, ms, time } from './format.js';
import { latencyChart } from './latency-chart.js';
import { resendSection } from './views-resend.js';
import { circuitBlock, probeText } from './waiting.js';

const enc = encodeURIComponent;

/** Fetches every endpoint (following cursors, up to `max`) with its health; `tenantId` filters. */
async function endpointsWithHealth(api, max = 500, tenantId = undefined) {
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

function endpointColumns(ctx, rerender, withTenant) {
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
    { label: 'Circuit', value: (e) => circuitCell(e.health) },
    { label: 'Failure streak', value: (e) => count(e.health.consecutive_failures), class: 'num' },
    { label: 'p50', value: (e) => ms(e.health.p50_ms), class: 'num' },
    { label: 'p95', value: (e) => ms(e.health.p95_ms), class: 'num' },
    { label: 'p99', value: (e) => ms(e.health.p99_ms), class: 'num' },
    { label: 'State', value: enabledCell },
    { label: 'Action', value: (e) => toggleButton(ctx, e, rerender) },
  ];
}

/**
 * The create form under the list; after a create the secret shows once above the list, which
 * refreshes to include the new endpoint. `withTenant`: the admin page asks which tenant.
 */
function createSection(ctx, types, revealed, refresh) {
  const holder = h('div');
  const build = () =>
    endpointEditor(ctx, {
      types,
      withTenant: !ctx.singleTenant,
      label: 'New endpoint',
      submitLabel: 'Create endpoint',
      onSaved: async (created) => {
        const form = build();
        replace(holder, form);
        revealCreated(ctx, revealed, created, form);
        await refresh();
      },
    });
  replace(holder, build());
  return section('New endpoint', holder);
}

/**
 * The list and the create form. ?tenant_id= in the hash narrows the list to one tenant (the API's
 * own filter); the portal (ctx.singleTenant) has no tenant filter and its own title.
 */
export async function endpointsView(ctx, view, query, { title = 'Endpoints' } = {}) {
  const holder = h('div');
  const revealed = h('div');
  const tenantId = query?.get('tenant_id') || undefined;
  let filter = null;
  if (!ctx.singleTenant) {
    const tenantInput = h('input', { name: 'tenant_id', value: tenantId ?? '', placeholder: 'any tenant' });
    filter = h(
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
  }
  async function render() {
    const rows = await endpointsWithHealth(ctx.api, 500, tenantId);
    const withTenant = !ctx.singleTenant && rows.some((e) => e.tenant_id !== undefined);
    const empty = ctx.singleTenant ? 'No endpoints yet: create one below.' : 'No endpoints yet.';
    replace(holder, table('Endpoints', endpointColumns(ctx, render, withTenant), rows, empty));
  }
  const types = await catalog(ctx.api);
  replace(
    view,
    h('h1', { tabindex: '-1' }, tenantId ? `Endpoints of ${tenantId}` : title),
    revealed,
    section('Endpoints and their health', filter, holder),
    createSection(ctx, types, revealed, render),
  );
  await render();
}

function definitionList(pairs) {
  return h(
    'dl',
    { class: 'pairs' },
    pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
  );
}

/** The circuit's state, and for one that is not closed, when it lets its next probe through. */
function circuitCell(health) {
  if (health.state === 'closed') return badge(health.state);
  return h('span', {}, badge(health.state), h('small', { class: 'reason' }, probeText(health.next_probe_at)));
}

function healthPairs(health) {
  return definitionList([
    // The next probe has its own row here; the list shows it under the badge.
    ['Circuit', h('span', { dataset: { circuit: health.state } }, badge(health.state))],
    ['Failure streak', count(health.consecutive_failures)],
    ['Opened at', time(health.opened_at)],
    ['Next probe', health.state === 'closed' ? '–' : time(health.next_probe_at)],
    [
      'Deliveries waiting',
      h('span', { dataset: { parked: String(health.parked_count ?? 0) } }, count(health.parked_count)),
    ],
    ['Failing since', time(health.failing_since)],
    ['Last success', time(health.last_success_at)],
    ['Last failure', time(health.last_failure_at)],
    ['p50 / p95 / p99 (24 h)', `${ms(health.p50_ms)} / ${ms(health.p95_ms)} / ${ms(health.p99_ms)}`],
    [
      'Samples (24 h)',
      h('span', { dataset: { samples: String(health.sample_count) } }, count(health.sample_count)),
    ],
  ]);
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * One endpoint: its settings, health and latency chart, test event, editor, secret rotation,
 * "resend since…" and delete.
 */
export async function endpointView(ctx, view, id) {
  const [e, health, types] = await Promise.all([
    ctx.api.get(`/v1/endpoints/${enc(id)}`),
    ctx.api.get(`/v1/endpoints/${enc(id)}/health`),
    catalog(ctx.api),
  ]);
  const chart = h('div', { class: 'chart', role: 'img', 'aria-label': `Latency of ${id} over 24 hours` });
  const rerender = () => (view.isConnected ? endpointView(ctx, view, id) : undefined);
  // After Retry now: the page as it now is, and the report in its Health section.
  const afterRetry = async () => {
    await rerender();
    return view.querySelector('[data-circuit]');
  };
  // The pairs, and while the circuit is not closed, what waits behind it and Retry now.
  const healthParts = (hl) => [healthPairs(hl), circuitBlock(ctx, e, hl, afterRetry)];
  const healthHolder = h('div', {}, healthParts(health));
  /**
   * Health and chart again, in place. After an attempt the dispatcher records its latency just
   * after the delivery settles: wait (briefly) until the sample shows.
   */
  async function refreshHealth({ afterAttempt = false } = {}) {
    let fresh = await ctx.api.get(`/v1/endpoints/${enc(id)}/health`);
    for (let i = 0; afterAttempt && i < 20 && fresh.sample_count <= health.sample_count; i++) {
      await pause(250);
      fresh = await ctx.api.get(`/v1/endpoints/${enc(id)}/health`);
    }
    Object.assign(health, fresh);
    replace(healthHolder, healthParts(fresh));
    latencyChart(chart, await ctx.api.get(`/v1/endpoints/${enc(id)}/latency`, { hours: 24 }));
  }
  const editor = endpointEditor(ctx, {
    endpoint: e,
    types,
    label: `Edit ${e.id}`,
    submitLabel: 'Save',
    onSaved: async (saved, form) => {
      await rerender();
      ctx.notify(`${saved.id} saved.`, 'info', view.querySelector('form.editor') ?? form);
    },
  });
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
        ['Filter', e.filter ? h('code', {}, JSON.stringify(e.filter)) : 'none: every event it subscribes to'],
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
    section('Health', healthHolder),
    section('Latency, last 24 hours', chart),
    testSection(ctx, e, refreshHealth),
    section('Edit', editor),
    secretSection(ctx, e),
    resendSection(ctx, e.id),
    deleteSection(ctx, e, '#/endpoints'),
  );
  latencyChart(chart, await ctx.api.get(`/v1/endpoints/${enc(id)}/latency`, { hours: 24 }));
}
