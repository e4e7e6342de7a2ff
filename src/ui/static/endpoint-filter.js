/**
 * The endpoint editor's Filter section (a content filter, docs/filters.md): the filter as JSON,
 * checked as it is typed, and tried on one of the tenant's recent events before saving, with the
 * same evaluation the enqueue makes (POST /v1/filters/test). One entry of ENDPOINT_SECTIONS.
 */
import { actionButton, field, h, replace } from './dom.js';

const pretty = (value) => (value ? JSON.stringify(value, null, 2) : '');

/**
 * The filter text as the request field: null when empty (no filter), else the parsed JSON.
 * Throws SyntaxError for text that is not JSON (the textarea is then marked invalid).
 */
function parse(text) {
  return text.trim() === '' ? null : JSON.parse(text);
}

/** The tenant whose recent events are offered: the endpoint's, or the form's Tenant field on create. */
function tenantOf(e, node) {
  if (e) return e.tenant_id;
  const input = node.closest('form')?.querySelector('[name=tenant_id]');
  return input ? input.value.trim() || 'default' : undefined;
}

const eventLabel = (m) => `${m.event_type} · ${m.id} · ${new Date(m.created_at).toLocaleString()}`;

export function filterSection(e, { ctx }) {
  const text = h('textarea', {
    name: 'filter',
    rows: 6,
    spellcheck: 'false',
    class: 'code',
    placeholder: '{"data": {"currency": "EUR", "amount": {"$gt": 100}}}',
  });
  text.value = pretty(e?.filter);
  // Checked as it is typed: a form with text that is not JSON cannot be submitted.
  const check = () => {
    try {
      parse(text.value);
      text.setCustomValidity('');
    } catch {
      text.setCustomValidity('The filter is not valid JSON.');
    }
  };
  text.addEventListener('input', check);

  const events = h('select', { 'aria-label': 'Recent event to try the filter on' });
  const result = h('p', { class: 'inline-notice', role: 'status', 'aria-live': 'polite', hidden: true });
  const show = (message, kind) => {
    result.hidden = false;
    result.textContent = message;
    result.className = `inline-notice ${kind}`;
  };
  let recent = [];
  const load = actionButton(
    'Load recent events',
    async () => {
      const tenant = tenantOf(e, text);
      const page = await ctx.run(
        () => ctx.api.get('/v1/messages', { limit: 20, ...(tenant ? { tenant_id: tenant } : {}) }),
        text,
      );
      if (!page) return;
      recent = page.data.filter((m) => !m.payload_expired);
      replace(
        events,
        recent.map((m, i) => h('option', { value: String(i) }, eventLabel(m))),
      );
      if (recent.length === 0) show('No recent events of this tenant to try it on.', 'info');
      else result.hidden = true;
      events.disabled = recent.length === 0;
      tryIt.disabled = recent.length === 0;
    },
    { class: 'secondary' },
  );
  const tryIt = actionButton(
    'Try on this event',
    async () => {
      // The last answer goes at once: an old one must never read as this try's.
      result.hidden = true;
      let filter;
      try {
        filter = parse(text.value) ?? {};
      } catch {
        return show('The filter is not valid JSON.', 'error');
      }
      const message = recent[Number(events.value)];
      if (!message) return;
      try {
        const { matches } = await ctx.api.post('/v1/filters/test', { filter, payload: message.payload });
        show(
          matches
            ? `Matches: ${message.id} would be delivered to this endpoint.`
            : `Does not match: ${message.id} would not be delivered to this endpoint.`,
          matches ? 'info' : 'warn',
        );
      } catch (error) {
        show(error.message, 'error');
      }
    },
    { class: 'secondary', disabled: true },
  );
  events.disabled = true;

  const node = [
    field('Filter (JSON)', text, 'only events whose payload matches; empty: every event it subscribes to'),
    h('div', { class: 'filter-try' }, load, events, tryIt),
    result,
  ];
  return { node, value: () => ({ filter: parse(text.value) }) };
}
