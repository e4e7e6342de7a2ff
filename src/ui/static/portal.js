/**
 * The partner portal's shell: signed in by the session URL from
 * POST /v1/tenants/{id}/portal-sessions, whose fragment (#token=hpk_…) never reaches a server.
 * The token moves to sessionStorage and out of the address bar (history, screenshots, a copied
 * link), then every view calls the /v1 API with it: a key bound to one tenant with endpoints:read,
 * endpoints:write, deliveries:read and replay, so this page can do nothing more than that.
 *
 * A link is a login anyone can send, so a link carrying another session than the one signed in
 * (another tenant's, perhaps the sender's own) is not adopted silently: the page asks, naming
 * both tenants, and until the partner presses Switch it keeps acting as the current session.
 */
import { keyStore } from './api.js';
import { h, replace } from './dom.js';
import { createShell } from './shell.js';
import { deadLettersView } from './views-dead-letters.js';
import { deliveriesView, deliveryView } from './views-deliveries.js';
import { endpointsView, endpointView } from './views-endpoints.js';

const store = keyStore('hookpost.portal.key');
const view = document.getElementById('view');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
const signedOut = document.getElementById('signed-out');
const tenantLabel = document.getElementById('tenant');
const sessionPrompt = document.getElementById('session-prompt');

/**
 * Takes a token out of the fragment and puts `back` in its place (no hashchange: the caller
 * routes); the token, or null when the fragment holds none.
 */
function takeToken(back = '#/endpoints') {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (!token) return null;
  history.replaceState(null, '', `${location.pathname}${location.search}${back}`);
  return token;
}

/**
 * Whose session `token` is (GET /v1/whoami with it), asked without storing it anywhere:
 * {status, tenantId}; status 0 when the server could not be reached.
 */
async function whoami(token) {
  try {
    const res = await fetch('/v1/whoami', {
      headers: { authorization: `Bearer ${token}` },
      cache: 'no-store',
    });
    const body = res.ok ? await res.json() : null;
    return { status: res.status, tenantId: body?.tenant_id ?? null };
  } catch {
    return { status: 0, tenantId: null };
  }
}

/** A tenant as people read it: an unbound key belongs to no single tenant. */
const tenantName = (id) => id ?? 'every tenant';

const { ctx, route, stop } = createShell({
  store,
  view,
  nav,
  notice: document.getElementById('notice'),
  home: '#/endpoints',
  onUnauthorized: () =>
    showSignedOut(
      store.get()
        ? 'This portal session has expired or was revoked. Ask for a new link.'
        : 'Open this portal from the link you were given: it signs you in for a limited time.',
    ),
  options: {
    singleTenant: true,
    hiddenFilters: ['tenant_id'],
  },
  routes: [
    // The admin page's endpoint views, worded for a partner and confined to the key's tenant.
    [/^#\/endpoints$/, (c, v, q) => endpointsView(c, v, q, { title: 'Your endpoints' })],
    [/^#\/endpoints\/([^/?]+)$/, (c, v, _q, id) => endpointView(c, v, id)],
    [/^#\/deliveries$/, deliveriesView],
    [/^#\/deliveries\/([^/?]+)$/, (c, v, _q, id) => deliveryView(c, v, id)],
    [/^#\/dead-letters$/, deadLettersView],
  ],
});

function showSignedOut(reason) {
  stop();
  store.clear();
  closePrompt();
  signedOut.hidden = false;
  nav.hidden = true;
  signOut.hidden = true;
  tenantLabel.textContent = '';
  document.getElementById('signed-out-reason').textContent = reason;
  replace(view);
}

signOut.addEventListener('click', () => showSignedOut('Signed out. Open the link again to come back.'));

function signedIn() {
  signedOut.hidden = true;
  nav.hidden = false;
  signOut.hidden = false;
  route();
  // Which tenant this is, from the key itself: only an answer for the key still stored names it
  // (the views no longer do: a view's answer for the session just switched from could arrive
  // after the switch and put the old tenant's name back).
  const key = store.get();
  ctx.api
    .get('/v1/whoami')
    .then((me) => {
      if (store.get() === key) tenantLabel.textContent = tenantName(me.tenant_id);
    })
    .catch(() => {}); // a 401 has signed out already; anything else leaves the label empty
}

function closePrompt() {
  replace(sessionPrompt);
  sessionPrompt.hidden = true;
}

/**
 * Asks before the signed-in partner (tenant `mine`) moves to the session of a link (tenant
 * `theirs`): a link can carry anyone's session, and whatever is done after switching happens in
 * that tenant. Until Switch is pressed the token lives only here, in memory.
 */
function askToSwitch(token, mine, theirs) {
  const stay = h('button', { type: 'button' }, `Stay in ${tenantName(mine)}`);
  const change = h('button', { type: 'button', class: 'secondary' }, `Switch to ${tenantName(theirs)}`);
  const dialog = h(
    'section',
    {
      class: 'card session-switch',
      role: 'alertdialog',
      'aria-labelledby': 'session-switch-title',
      'aria-describedby': 'session-switch-text',
    },
    h('h2', { id: 'session-switch-title' }, 'Switch to another portal session?'),
    h(
      'p',
      { id: 'session-switch-text' },
      'The link you opened signs in to the portal of ',
      h('strong', {}, tenantName(theirs)),
      '. You are signed in as ',
      h('strong', {}, tenantName(mine)),
      '. Switch only if you expected a link for ',
      tenantName(theirs),
      ': everything you do after switching happens there.',
    ),
    h('p', { class: 'confirm-question' }, stay, ' ', change),
  );
  stay.addEventListener('click', () => {
    closePrompt();
    ctx.notify(`Still signed in as ${tenantName(mine)}.`);
    view.querySelector('h1')?.focus();
  });
  change.addEventListener('click', () => {
    closePrompt();
    store.set(token);
    tenantLabel.textContent = tenantName(theirs);
    ctx.notify(`Signed in as ${tenantName(theirs)}.`);
    history.replaceState(null, '', `${location.pathname}${location.search}#/endpoints`);
    signedIn();
  });
  dialog.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') stay.click();
  });
  replace(sessionPrompt, dialog);
  sessionPrompt.hidden = false;
  stay.focus();
}

/**
 * A session link arrived (on load or in an open tab). With no session it signs in, as it always
 * has; the same session changes nothing; another session is looked up first and only adopted
 * when the partner says so (or when it is the same tenant's, e.g. a fresh link).
 */
async function arrive(token, rendered) {
  const current = store.get();
  if (!current || current === token) {
    store.set(token);
    signedIn();
    return;
  }
  if (!rendered) signedIn();
  const [mine, theirs] = await Promise.all([whoami(current), whoami(token)]);
  if (store.get() !== current) return; // signed out or switched meanwhile
  if (mine.status === 401) {
    // The session here had already ended: the link signs in as it would on a fresh tab.
    closePrompt();
    store.set(token);
    signedIn();
    return;
  }
  if (theirs.status === 401) {
    ctx.notify(
      `The link you opened has expired or was revoked; you are still signed in as ${tenantName(mine.tenantId)}.`,
      'error',
    );
    return;
  }
  if (mine.status !== 200 || theirs.status !== 200) {
    ctx.notify('Could not check the link you opened; you are still signed in as before.', 'error');
    return;
  }
  if (mine.tenantId === theirs.tenantId) {
    closePrompt();
    store.set(token);
    signedIn();
    return;
  }
  askToSwitch(token, mine.tenantId, theirs.tenantId);
}

// A session link opened in a tab that is already open: the shell has routed the fragment (a "Not
// found"); put back where the partner was, then decide about the token.
window.addEventListener('hashchange', (event) => {
  const before = new URL(event.oldURL).hash;
  const token = takeToken(before && !before.includes('token=') ? before : '#/endpoints');
  if (!token) return;
  const current = store.get();
  if (current && current !== token) route();
  arrive(token, true);
});

const linked = takeToken();
if (linked) arrive(linked, false);
else if (store.get()) signedIn();
else showSignedOut('Open this portal from the link you were given: it signs you in for a limited time.');
