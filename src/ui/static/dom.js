/**
 * A few DOM helpers shared by the admin page and (later) the partner portal. Text always goes in
 * through textContent, never innerHTML, so nothing the API returns can become markup.
 */

/**
 * h('button', {type: 'button', onclick: fn, class: 'x'}, 'label', child…): an element.
 * Attributes starting with "on" become listeners; null/undefined/false attributes are left out.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Number.POSITIVE_INFINITY)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * A table in a scrolling wrapper (wide tables scroll sideways on a phone instead of squeezing).
 * columns: [{label, value: (row) => node|string, class?}]; rows: objects.
 */
export function table(caption, columns, rows, empty = 'Nothing here.') {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  const head = h(
    'tr',
    {},
    columns.map((c) => h('th', { scope: 'col' }, c.label)),
  );
  const body = rows.map((row) =>
    h(
      'tr',
      {},
      columns.map((c) => h('td', { class: c.class, 'data-label': c.label }, c.value(row))),
    ),
  );
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, head),
      h('tbody', {}, body),
    ),
  );
}

let fieldCount = 0;

/** A labelled form control: field('Endpoint id', h('input', {...})). */
export function field(label, control, hint) {
  fieldCount += 1;
  const id = control.id || `f${fieldCount}`;
  control.id = id;
  const hintEl = hint ? h('small', { id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

/** A button that runs `action` once at a time, disabled while it runs. */
export function actionButton(label, action, attrs = {}) {
  const button = h('button', { type: 'button', ...attrs }, label);
  button.addEventListener('click', async () => {
    if (button.disabled) return;
    button.disabled = true;
    try {
      await action(button);
    } finally {
      if (button.isConnected && !button.dataset.done) button.disabled = false;
    }
  });
  return button;
}

/** A section with a heading. */
export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

/**
 * A button for an action that needs a second thought (disable, delete): the first click shows
 * what will happen, a confirm button and Cancel in its place; only the confirm runs `action`.
 * `confirmLabel` names the action and its object ("Delete ep_… for good").
 */
export function confirmButton(label, { confirmLabel, explain, action, attrs = {}, danger = true }) {
  const holder = h('span', { class: 'confirm' });
  const ask = h('button', { type: 'button', class: 'secondary', ...attrs }, label);
  const confirm = actionButton(confirmLabel, action, { class: danger ? 'danger' : '' });
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  const question = h('span', { class: 'confirm-question' }, explain, ' ', confirm, ' ', cancel);
  ask.addEventListener('click', () => {
    replace(holder, question);
    confirm.focus();
  });
  cancel.addEventListener('click', () => {
    replace(holder, ask);
    ask.focus();
  });
  return replace(holder, ask);
}
