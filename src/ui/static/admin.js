/**
 * The admin page's shell: sign-in with a key typed in, and its routes over the shared views
 * (shell.js); the partner portal (portal.js) is another shell over the same views.
 */
import { ApiError, keyStore } from './api.js';
import { replace } from './dom.js';
import { createShell, describe } from './shell.js';
import { deadLettersView } from './views-dead-letters.js';
import { deliveriesView, deliveryView } from './views-deliveries.js';
import { endpointsView, endpointView } from './views-endpoints.js';
import { pipelineView } from './views-pipeline.js';

const store = keyStore('hookpost.admin.key');
const view = document.getElementById('view');
const signIn = document.getElementById('sign-in');
const signInError = document.getElementById('sign-in-error');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');

const { ctx, route, stop } = createShell({
  store,
  view,
  nav,
  notice: document.getElementById('notice'),
  home: '#/pipeline',
  onUnauthorized: () => showSignIn(store.get() ? 'The key was refused (401). Sign in again.' : ''),
  routes: [
    [/^#\/pipeline$/, pipelineView],
    [/^#\/endpoints$/, endpointsView],
    [/^#\/endpoints\/([^/?]+)$/, (c, v, _q, id) => endpointView(c, v, id)],
    [/^#\/dead-letters$/, deadLettersView],
    [/^#\/deliveries$/, deliveriesView],
    [/^#\/deliveries\/([^/?]+)$/, (c, v, _q, id) => deliveryView(c, v, id)],
  ],
});

function showSignIn(message = '') {
  stop();
  store.clear();
  signIn.hidden = false;
  nav.hidden = true;
  signOut.hidden = true;
  replace(view);
  signInError.textContent = message;
  document.getElementById('key').focus();
}

signIn.addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = document.getElementById('key').value.trim();
  if (!key) return;
  store.set(key);
  try {
    // Any /v1 read proves the key; the pipeline is what the page shows first. A 403 (a key
    // without that scope) is still a valid key: each view then shows what the key may not do.
    await ctx.api.get('/v1/pipeline');
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 403)) {
      const refused = error instanceof ApiError && error.status === 401;
      showSignIn(refused ? 'That key was refused (401).' : describe(error));
      return;
    }
  }
  document.getElementById('key').value = '';
  signedIn();
});

signOut.addEventListener('click', () => showSignIn('Signed out.'));

function signedIn() {
  signIn.hidden = true;
  nav.hidden = false;
  signOut.hidden = false;
  route();
}

if (store.get()) signedIn();
else showSignIn();
