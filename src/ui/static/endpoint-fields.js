/**
 * The endpoint editor's field sections, shared by the admin page and the partner portal for both
 * create and edit. Each section is {key, title, optional, fields, build(endpoint, context) →
 * {node, value()}}: `endpoint` is undefined on create; `value()` returns the request fields the section
 * owns, whole (the editor sends on edit only those that differ from the stored endpoint). A new
 * field (a filter, auth, tls, a legacy signature) is one more entry in ENDPOINT_SECTIONS.
 */
import { field, h } from './dom.js';
import { CREDENTIAL_SECTIONS } from './endpoint-credentials.js';
import { filterSection } from './endpoint-filter.js';

/** The event-type catalog (GET /v1/event-types), first page of up to 500, deprecated ones left out. */
export async function catalog(api) {
  const page = await api.get('/v1/event-types', { limit: 500 });
  return page.data.filter((t) => !t.deprecated);
}

const list = (text) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * Checkboxes for the catalog plus a free field for other types (patterns such as `order.*`).
 * Nothing ticked and nothing typed: every event type.
 */
function eventTypes(e, { types }) {
  const selected = e?.event_types ?? [];
  const chosen = new Set(selected);
  const known = new Set(types.map((t) => t.name));
  const boxes = types.map((t) =>
    h('input', { type: 'checkbox', value: t.name, checked: chosen.has(t.name) }),
  );
  const other = h('input', {
    value: selected.filter((s) => !known.has(s)).join(', '),
    placeholder: 'e.g. order.*, invoice.paid',
  });
  const node = [
    types.length
      ? h(
          'div',
          { class: 'checks' },
          boxes.map((box, i) =>
            h(
              'label',
              { class: 'check' },
              box,
              h('span', {}, types[i].name),
              types[i].description ? h('small', {}, types[i].description) : null,
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No catalog yet.'),
    field('Other event types', other, 'comma-separated; a name may end in .*'),
  ];
  const value = () => ({
    event_types: [...boxes.filter((b) => b.checked).map((b) => b.value), ...list(other.value)],
  });
  return { node, value };
}

const origin = (url) => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/** Secrets hookpost drops when the URL moves to another origin (scheme, host or port). */
const hasCredentials = (e) =>
  Object.keys(e?.headers ?? {}).length > 0 || Boolean(e?.auth || e?.tls || e?.legacy_signature);

function target(e) {
  const url = h('input', {
    name: 'url',
    type: 'url',
    required: true,
    placeholder: 'https://…',
    value: e?.url,
  });
  const description = h('input', { name: 'description', maxlength: 1024, value: e?.description });
  const moving = h('p', { class: 'inline-notice warn', role: 'status', hidden: true });
  url.addEventListener('input', () => {
    const elsewhere = hasCredentials(e) && origin(url.value) !== null && origin(url.value) !== origin(e.url);
    moving.hidden = !elsewhere;
    moving.textContent = elsewhere
      ? 'Another host: its stored header values and credentials are dropped unless entered again below.'
      : '';
  });
  return {
    node: [field('URL', url, 'where the events are POSTed'), moving, field('Description', description)],
    value: () => ({ url: url.value.trim(), description: description.value.trim() }),
  };
}

/** A number field whose empty value means "the default" (null). */
function numberField(label, value, hint, attrs = {}) {
  const input = h('input', {
    type: 'number',
    inputmode: 'decimal',
    step: 'any',
    value: value ?? '',
    ...attrs,
  });
  return { node: field(label, input, hint), read: () => (input.value === '' ? null : Number(input.value)) };
}

function limits(e) {
  const rate = numberField('Rate limit (per second)', e?.rate_limit_per_second, 'empty: no limit', {
    min: 0,
  });
  const inFlight = numberField('Most in flight', e?.max_in_flight, 'empty: no limit', { min: 1, step: 1 });
  return {
    node: [rate.node, inFlight.node],
    value: () => ({ rate_limit_per_second: rate.read(), max_in_flight: inFlight.read() }),
  };
}

function retryPolicy(e) {
  const attempts = numberField('Attempts before dead letter', e?.max_attempts, 'empty: the default', {
    min: 1,
    max: 50,
    step: 1,
  });
  const base = numberField('Retry base (seconds)', e?.retry_base_seconds, 'empty: the default', { min: 0.1 });
  const cap = numberField(
    'Longest wait between tries (seconds)',
    e?.retry_cap_seconds,
    'empty: the default',
    {
      min: 0.1,
    },
  );
  return {
    node: [attempts.node, base.node, cap.node],
    value: () => ({
      max_attempts: attempts.read(),
      retry_base_seconds: base.read(),
      retry_cap_seconds: cap.read(),
    }),
  };
}

/**
 * Name/value rows. Stored values come back masked: sent back unchanged, the mask keeps the stored
 * value. On edit the section sends a merge patch (a removed or renamed row's old name → null),
 * and nothing when the rows are as they were.
 */
function headers(e) {
  const stored = e?.headers ?? {};
  const rows = h('div', { class: 'header-rows' });
  let n = 0;
  const addRow = (name = '', value = '') => {
    n += 1;
    const nameInput = h('input', { value: name, 'aria-label': `Header ${n} name`, placeholder: 'X-Api-Key' });
    const valueInput = h('input', { value, 'aria-label': `Header ${n} value`, autocomplete: 'off' });
    const row = h('div', { class: 'header-row' }, nameInput, valueInput);
    row.append(
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `Remove header ${n}`,
          onclick: () => row.remove(),
        },
        'Remove',
      ),
    );
    rows.append(row);
    return nameInput;
  };
  for (const [name, value] of Object.entries(stored)) addRow(name, value);
  const add = h(
    'button',
    { type: 'button', class: 'secondary', onclick: () => addRow().focus() },
    'Add header',
  );
  const node = [
    h('p', { class: 'muted' }, 'Sent with every request; stored sealed and shown masked.'),
    rows,
    h('p', { class: 'actions' }, add),
  ];
  const value = () => {
    const current = {};
    for (const row of rows.children) {
      const [name, val] = row.querySelectorAll('input');
      if (name.value.trim()) current[name.value.trim()] = val.value;
    }
    if (!e) return Object.keys(current).length ? { headers: current } : {};
    const patch = {};
    const lower = new Set(Object.keys(current).map((k) => k.toLowerCase()));
    for (const name of Object.keys(stored)) if (!lower.has(name.toLowerCase())) patch[name] = null;
    for (const [name, val] of Object.entries(current)) if (stored[name] !== val) patch[name] = val;
    return Object.keys(patch).length ? { headers: patch } : {};
  };
  return { node, value };
}

/**
 * The editor's sections, in order. `optional` ones are folded, unless (on edit) one of their
 * `fields` holds something other than the default.
 */
export const ENDPOINT_SECTIONS = [
  { key: 'target', title: 'Target', fields: ['url', 'description'], build: target },
  {
    key: 'event_types',
    title: 'Event types (none ticked: all of them)',
    fields: ['event_types'],
    build: eventTypes,
  },
  { key: 'filter', title: 'Filter', optional: true, fields: ['filter'], build: filterSection },
  { key: 'headers', title: 'Headers', optional: true, fields: ['headers'], build: headers },
  {
    key: 'limits',
    title: 'Rate and concurrency',
    optional: true,
    fields: ['rate_limit_per_second', 'max_in_flight'],
    build: limits,
  },
  {
    key: 'retry',
    title: 'Retry policy',
    optional: true,
    fields: ['max_attempts', 'retry_base_seconds', 'retry_cap_seconds'],
    build: retryPolicy,
  },
  ...CREDENTIAL_SECTIONS,
];
