/**
 * "Resend since…" on an endpoint's page (admin page and portal): POST /v1/endpoints/{id}/resend
 * sends the endpoint's events of a time range again, delivered ones included, with their
 * original webhook-ids; a dry run shows how many match before anything is sent.
 */
import { actionButton, field, h, section } from './dom.js';
import { count } from './format.js';
import { localToIso } from './views-dead-letters.js';

const enc = encodeURIComponent;

export function resendSection(ctx, endpointId) {
  const inputs = {
    since: h('input', { type: 'datetime-local', required: true }),
    until: h('input', { type: 'datetime-local' }),
    reason: h('input', { maxlength: 500, placeholder: 'e.g. receiver lost data on 1 Dec' }),
  };
  const result = h('p', { class: 'result', role: 'status', 'aria-live': 'polite' });
  let previewed = null;
  const body = () => ({
    since: localToIso(inputs.since.value),
    until: localToIso(inputs.until.value),
    reason: inputs.reason.value.trim() || undefined,
  });
  const path = `/v1/endpoints/${enc(endpointId)}/resend`;
  const resend = actionButton('Resend', async () => {
    await ctx.run(async () => {
      const started = await ctx.api.post(path, body());
      let audit = started;
      while (audit.state === 'running' && result.isConnected) {
        result.textContent = `Resending ${count(audit.matched)}: ${count(audit.resent)} queued.`;
        await new Promise((r) => setTimeout(r, 1000));
        audit = await ctx.api.get(`/v1/dead-letters/replays/${enc(started.audit_id)}`);
      }
      result.textContent = `Resend ${audit.state ?? 'finished'}: ${count(audit.resent)} of ${count(audit.matched)} queued, ${count(audit.skipped)} skipped.`;
    });
  });
  resend.disabled = true;
  const preview = actionButton('Preview (dry run)', async () => {
    await ctx.run(async () => {
      const r = await ctx.api.post(path, { ...body(), dry_run: true });
      previewed = JSON.stringify(body());
      const skipped = r.skipped ? ` (${count(r.skipped)} skipped: still queued or payload erased)` : '';
      result.textContent = `${count(r.matched)} event${r.matched === 1 ? '' : 's'} in the range${skipped}.`;
      resend.disabled = r.matched - r.skipped <= 0;
    });
  });
  const form = h(
    'form',
    { class: 'filters', onsubmit: (e) => e.preventDefault() },
    field('Since', inputs.since),
    field('Until', inputs.until, 'default: now'),
    field('Reason', inputs.reason, 'kept in the audit log'),
    h('p', { class: 'actions' }, preview, resend),
    result,
  );
  // A changed range needs a fresh preview before a real resend.
  form.addEventListener('input', () => {
    if (previewed !== JSON.stringify(body())) resend.disabled = true;
  });
  return section(
    'Resend since…',
    h(
      'p',
      {},
      "Sends this endpoint's events of a time range again, delivered ones included, with their original webhook-id, paced.",
    ),
    form,
  );
}
