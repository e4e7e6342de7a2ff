/**
 * The endpoint editor (create and edit), built from the field sections in endpoint-fields.js, and
 * the box that shows a new signing secret once. Shared by the admin page and the partner portal.
 */
import { field, h, replace } from './dom.js';
import { ENDPOINT_SECTIONS } from './endpoint-fields.js';

const enc = encodeURIComponent;
const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** A box that shows a secret or key once, until the person says they have it. */
export function secretOnce(title, label, value) {
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

/** The once-only part of a create or rotate answer: the v1 secret or the v1a public key. */
export function signingBox(title, created) {
  if (created.secret)
    return secretOnce(title, 'Verify each request with it (Standard Webhooks).', created.secret);
  if (created.public_key)
    return secretOnce(title, 'Verify each request with this Ed25519 public key.', created.public_key);
  return null;
}

/**
 * A form that creates (no `endpoint`) or edits one. `withTenant`: a Tenant field on create (the
 * admin page; a portal key has its tenant). On edit only the fields that changed are sent, so the
 * audit log names what was really changed. `onSaved(endpoint)` runs after the API accepted it
 * (a create's answer carries the new secret).
 */
export function endpointEditor(ctx, { endpoint, types, withTenant = false, label, submitLabel, onSaved }) {
  const built = ENDPOINT_SECTIONS.map((section) => ({ section, ...section.build(endpoint, { types, ctx }) }));
  const tenant = withTenant && !endpoint ? h('input', { name: 'tenant_id', placeholder: 'default' }) : null;
  const submit = h('button', { type: 'submit' }, submitLabel);
  const form = h(
    'form',
    { class: 'stack editor', 'aria-label': label },
    tenant ? field('Tenant', tenant, 'a new tenant is created; empty: default') : null,
    built.map(({ section, node }) => {
      // A folded section's summary shows its title; its legend stays for screen readers.
      const legend = h('legend', { class: section.optional ? 'visually-hidden' : null }, section.title);
      const fieldset = h('fieldset', {}, legend, node);
      if (!section.optional) return fieldset;
      // Folded on create; on edit open when the section holds anything but defaults.
      const open = endpoint !== undefined && section.fields.some((f) => isSet(endpoint[f]));
      return h('details', { class: 'optional', open }, h('summary', {}, section.title), fieldset);
    }),
    h('p', { class: 'actions' }, submit),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = Object.assign({}, ...built.map((b) => b.value()));
    if (endpoint) {
      for (const key of Object.keys(body)) if (same(body[key], endpoint[key])) delete body[key];
      if (Object.keys(body).length === 0) return ctx.notify('Nothing changed.', 'info', form);
    } else {
      // Empty optional fields mean the defaults: left out of a create.
      for (const key of Object.keys(body)) if (body[key] === null || body[key] === '') delete body[key];
      if (tenant?.value.trim()) body.tenant_id = tenant.value.trim();
    }
    submit.disabled = true;
    try {
      await ctx.run(async () => {
        const saved = endpoint
          ? await ctx.api.patch(`/v1/endpoints/${enc(endpoint.id)}`, body)
          : await ctx.api.post('/v1/endpoints', body);
        await onSaved(saved, form);
      }, form);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** A stored value other than the default: not null, not empty. */
function isSet(value) {
  if (value === null || value === undefined || value === '') return false;
  return typeof value !== 'object' || Object.keys(value).length > 0;
}

/** Shows `created`'s secret once in `holder` and says where the endpoint went. */
export function revealCreated(ctx, holder, created, near) {
  replace(holder, signingBox(`Signing secret of ${created.id}`, created));
  ctx.notify(`Endpoint ${created.id} created.`, 'info', near);
}
