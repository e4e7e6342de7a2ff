/**
 * The partner portal's shell: signed in by the session URL from
 * POST /v1/tenants/{id}/portal-sessions, whose fragment (#token=hpk_…) never reaches a server.
 * The token moves to sessionStorage and out of the address bar (history, screenshots, a copied
 * link), then every view calls the /v1 API with it: a key bound to one tenant with endpoints:read,
 * endpoints:write, deliveries:read and replay, so this page can do nothing more than that.
 */
import { keyStore } from './api.js';
import { replace } from './dom.js';
import { createShell } from './shell.js';
import { deadLettersView } from './views-dead-letters.js';
import { deliveriesView, deliveryView } from './views-deliveries.js';
import { portalEndpointsView, portalEndpointView } from './views-portal.js';

const store = keyStore('hookpost.portal.key');
const view = document.getElementById('view');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
const signedOut = document.getElementById('signed-out');
const tenantLabel = document.getElementById('tenant');

/** Takes the token out of the fragment; true when there was one. */
function adoptToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (!token) return false;
  store.set(token);
  history.replaceState(null, '', `${location.pathname}${location.search}#/endpoints`);
  return true;
}

const { route, stop } = createShell({
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
    /** The views tell the shell which tenant the key belongs to once they see it. */
    showTenant: (id) => {
      if (id) tenantLabel.textContent = id;
    },
  },
  routes: [
    [/^#\/endpoints$/, portalEndpointsView],
    [/^#\/endpoints\/([^/?]+)$/, (c, v, _q, id) => portalEndpointView(c, v, id)],
    [/^#\/deliveries$/, deliveriesView],
    [/^#\/deliveries\/([^/?]+)$/, (c, v, _q, id) => deliveryView(c, v, id)],
    [/^#\/dead-letters$/, deadLettersView],
  ],
});

function showSignedOut(reason) {
  stop();
  store.clear();
  signedOut.hidden = false;
  nav.hidden = true;
  signOut.hidden = true;
  tenantLabel.textContent = '';
  document.getElementById('signed-out-reason').textContent = reason;
  replace(view);
}

signOut.addEventListener('click', () => showSignedOut('Signed out. Open the link again to come back.'));

// A hash with a token (a second session link opened in the same tab) replaces the stored one.
window.addEventListener('hashchange', () => {
  if (adoptToken()) signedIn();
});

function signedIn() {
  signedOut.hidden = true;
  nav.hidden = false;
  signOut.hidden = false;
  route();
}

adoptToken();
if (store.get()) signedIn();
else showSignedOut('Open this portal from the link you were given: it signs you in for a limited time.');
