/**
 * The portal's own views over one tenant's endpoints: create (the secret shown once), edit,
 * subscribe to catalog event types, disable, rotate the secret, send a signed test event, delete.
 * Lists, health, the latency chart, deliveries and replays are the admin page's views.
 */
import { actionButton, field, h, replace, section, table } from './dom.js';
import { badge } from './format.js';
import { followDelivery } from './views-dead-letters.js';
import { endpointColumns, endpointsWithHealth, endpointView } from './views-endpoints.js';

const enc = encodeURIComponent;

/** The event-type catalog (GET /v1/event-types), first page of up to 500. */
async function catalog(api) {
  const page = await api.get('/v1/event-types', { limit: 500 });
  return page.data.filter((t) => !t.deprecated);
}

/**
 * Checkboxes for the catalog plus a free field for other types (patterns such as `order.*`).
 * Nothing ticked and nothing typed: every event type. Returns {node, value()}.
 */
function eventTypePicker(types, selected = []) {
  const chosen = new Set(selected);
  const known = new Set(types.map((t) => t.name));
  const boxes = types.map((t) => {
    const input = h('input', { type: 'checkbox', value: t.name, checked: chosen.has(t.name) });
    return h(
      'label',
      { class: 'check' },
      input,
      h('span', {}, t.name),
      t.description ? h('small', {}, t.description) : null,
    );
  });
  const other = h('input', {
    value: selected.filter((s) => !known.has(s)).join(', '),
    placeholder: 'e.g. order.*, invoice.paid',
  });
  const node = h(
    'fieldset',
    { class: 'event-types' },
    h('legend', {}, 'Event types (none ticked: all of them)'),
    types.length ? h('div', { class: 'checks' }, boxes) : h('p', { class: 'muted' }, 'No catalog yet.'),
    field('Other event types', other, 'comma-separated; a name may end in .*'),
  );
  const value = () => [
    ...boxes
      .map((b) => b.querySelector('input'))
      .filter((i) => i.checked)
      .map((i) => i.value),
    ...other.value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
  return { node, value };
}

/** A box that shows a secret or key once, until the person says they have it. */
function secretOnce(title, label, value) {
  const box = h(
    'div',
    { class: 'secret-once', role: 'alert' },
    h('h2', {}, title),
    h('p', {}, `Copy it now: it is shown only this once. ${label}`),
    h('code', { class: 'secret', tabindex: '0' }, value),
  );
  box.append(
    h(
      'p',
      { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => box.remove() }, 'I have copied it'),
    ),
  );
  return box;
}

function signingBox(title, created) {
  if (created.secret)
    return secretOnce(title, 'Verify each request with it (Standard Webhooks).', created.secret);
  if (created.public_key)
    return secretOnce(title, 'Verify each request with this Ed25519 public key.', created.public_key);
  return null;
}

export async function portalEndpointsView(ctx, view) {
  const types = await catalog(ctx.api);
  const revealed = h('div');
  const holder = h('div');
  const url = h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://…' });
  const description = h('input', { name: 'description', maxlength: 1024 });
  const picker = eventTypePicker(types);
  const form = h(
    'form',
    { class: 'stack', 'aria-label': 'New endpoint' },
    field('URL', url, 'where the events are POSTed'),
    field('Description', description),
    picker.node,
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Create endpoint')),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    await ctx.run(async () => {
      const body = { url: url.value.trim(), event_types: picker.value() };
      if (description.value.trim()) body.description = description.value.trim();
      const created = await ctx.api.post('/v1/endpoints', body);
      ctx.showTenant?.(created.tenant_id);
      form.reset();
      replace(revealed, signingBox(`Signing secret of ${created.id}`, created));
      ctx.notify(`Endpoint ${created.id} created.`);
      await render();
    });
  });
  async function render() {
    const rows = await endpointsWithHealth(ctx.api);
    ctx.showTenant?.(rows[0]?.tenant_id);
    replace(
      holder,
      table('Endpoints', endpointColumns(ctx, render, false), rows, 'No endpoints yet: create one below.'),
    );
  }
  replace(
    view,
    h('h1', { tabindex: '-1' }, 'Your endpoints'),
    revealed,
    section('Endpoints and their health', holder),
    section('New endpoint', form),
  );
  await render();
}

function editSection(ctx, e, types, rerender) {
  const url = h('input', { name: 'url', type: 'url', required: true, value: e.url });
  const description = h('input', { name: 'description', value: e.description, maxlength: 1024 });
  const picker = eventTypePicker(types, e.event_types);
  const form = h(
    'form',
    { class: 'stack', 'aria-label': `Edit ${e.id}` },
    field('URL', url),
    field('Description', description),
    picker.node,
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Save')),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    await ctx.run(async () => {
      await ctx.api.patch(`/v1/endpoints/${enc(e.id)}`, {
        url: url.value.trim(),
        description: description.value.trim(),
        event_types: picker.value(),
      });
      ctx.notify(`${e.id} saved.`);
      await rerender();
    });
  });
  return section('Edit', form);
}

function testSection(ctx, e) {
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  const send = actionButton('Send test event', async () => {
    await ctx.run(async () => {
      const sent = await ctx.api.post(`/v1/endpoints/${enc(e.id)}/test-event`);
      const d = sent.deliveries[0];
      const status = h('span', { class: 'status', 'data-status': d.status }, badge(d.status));
      replace(result, 'Test event ', h('a', { href: `#/deliveries/${enc(d.id)}` }, d.id), ': ', status);
      await followDelivery(ctx, d.id, status);
    });
  });
  return section(
    'Test',
    h('p', {}, 'Sends one signed hookpost.test event to this endpoint, whatever it subscribes to.'),
    h('p', { class: 'actions' }, send),
    result,
  );
}

function secretSection(ctx, e) {
  const revealed = h('div');
  const rotate = actionButton('Rotate secret', async () => {
    await ctx.run(async () => {
      const rotated = await ctx.api.post(`/v1/endpoints/${enc(e.id)}/rotate-secret`);
      replace(revealed, signingBox(`New signing secret of ${e.id}`, rotated));
      const hours = Math.round((rotated.previous_secret_expires_in_seconds / 3600) * 10) / 10;
      ctx.notify(`Rotated: the old secret keeps signing alongside for ${hours} h.`);
    });
  });
  return section(
    'Signing secret',
    h(
      'p',
      {},
      'A new secret is shown once; the old one keeps signing alongside for a grace period, so you can switch without losing events.',
    ),
    h('p', { class: 'actions' }, rotate),
    revealed,
  );
}

function deleteSection(ctx, e) {
  const confirm = actionButton(
    `Delete ${e.id} for good`,
    async () => {
      await ctx.run(async () => {
        await ctx.api.del(`/v1/endpoints/${enc(e.id)}`);
        ctx.notify(`${e.id} deleted.`);
        ctx.navigate('#/endpoints');
      });
    },
    { class: 'danger', hidden: true },
  );
  const ask = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: () => {
        ask.hidden = true;
        confirm.hidden = false;
        confirm.focus();
      },
    },
    'Delete…',
  );
  return section(
    'Delete',
    h('p', {}, 'Its queued events are not sent; its history stays.'),
    h('p', { class: 'actions' }, ask, confirm),
  );
}

export async function portalEndpointView(ctx, view, id) {
  const types = await catalog(ctx.api);
  await endpointView(ctx, view, id, (e, rerender) => {
    ctx.showTenant?.(e.tenant_id);
    return h(
      'div',
      {},
      editSection(ctx, e, types, rerender),
      testSection(ctx, e),
      secretSection(ctx, e),
      deleteSection(ctx, e),
    );
  });
}
