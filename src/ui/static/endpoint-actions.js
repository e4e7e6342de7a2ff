/**
 * What can be done to one endpoint, on the admin page and in the portal alike: disable (after a
 * confirmation) and enable, send a signed test event, rotate the signing secret (the new one shown
 * once), delete (after a confirmation). Each action reports in its own section and then calls
 * `refresh` so the page shows the endpoint as it now is.
 */
import { actionButton, confirmButton, h, replace, section } from './dom.js';
import { signingBox } from './endpoint-editor.js';
import { badge } from './format.js';
import { followDelivery } from './views-dead-letters.js';

const enc = encodeURIComponent;

/** Enable at once; disable only after saying what it does. `done` re-renders after the change. */
export function toggleButton(ctx, e, done) {
  const patch = (enabled, button) =>
    ctx.run(async () => {
      await ctx.api.patch(`/v1/endpoints/${enc(e.id)}`, { enabled });
      ctx.notify(`${e.id} ${enabled ? 'enabled' : 'disabled'}.`, 'info', button);
      await done();
    }, button);
  if (!e.enabled) {
    return actionButton('Enable', (button) => patch(true, button), { 'aria-label': `Enable ${e.id}` });
  }
  return confirmButton('Disable…', {
    confirmLabel: `Disable ${e.id}`,
    explain: 'Nothing is sent to it until it is enabled again; its deliveries wait.',
    action: (button) => patch(false, button),
    attrs: { 'aria-label': `Disable ${e.id}…` },
  });
}

/**
 * Sends one signed hookpost.test event and follows it until it settles; `refresh` then shows the
 * health and latency that attempt added.
 */
export function testSection(ctx, e, refresh) {
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  const send = actionButton('Send test event', async (button) => {
    await ctx.run(async () => {
      const sent = await ctx.api.post(`/v1/endpoints/${enc(e.id)}/test-event`);
      const d = sent.deliveries[0];
      const status = h('span', { class: 'status', 'data-status': d.status }, badge(d.status));
      replace(result, 'Test event ', h('a', { href: `#/deliveries/${enc(d.id)}` }, d.id), ': ', status);
      const settled = await followDelivery(ctx, d.id, status);
      if (settled) await refresh({ afterAttempt: true });
    }, button);
  });
  return section(
    'Test',
    h('p', {}, 'Sends one signed hookpost.test event to this endpoint, whatever it subscribes to.'),
    h('p', { class: 'actions' }, send),
    result,
  );
}

export function secretSection(ctx, e) {
  const revealed = h('div');
  const rotate = actionButton('Rotate secret', async (button) => {
    await ctx.run(async () => {
      const rotated = await ctx.api.post(`/v1/endpoints/${enc(e.id)}/rotate-secret`);
      replace(revealed, signingBox(`New signing secret of ${e.id}`, rotated));
      const hours = Math.round((rotated.previous_secret_expires_in_seconds / 3600) * 10) / 10;
      ctx.notify(`Rotated: the old secret keeps signing alongside for ${hours} h.`, 'info', button);
    }, button);
  });
  return section(
    'Signing secret',
    h(
      'p',
      {},
      'A new secret is shown once; the old one keeps signing alongside for a grace period, so the receiver can switch without losing events.',
    ),
    h('p', { class: 'actions' }, rotate),
    revealed,
  );
}

/** `home` is where the page goes once the endpoint is gone. */
export function deleteSection(ctx, e, home) {
  return section(
    'Delete',
    h('p', {}, 'Its queued events are cancelled, never sent; its history stays.'),
    h(
      'p',
      { class: 'actions' },
      confirmButton('Delete…', {
        confirmLabel: `Delete ${e.id} for good`,
        explain: 'This cannot be undone.',
        action: (button) =>
          ctx.run(async () => {
            await ctx.api.del(`/v1/endpoints/${enc(e.id)}`);
            ctx.notify(`${e.id} deleted.`);
            ctx.navigate(home);
          }, button),
      }),
    ),
  );
}
