/**
 * The admin page's shell: sign-in, a hash router over the views, and the context the views share
 * (api, notify, run, every, navigate). The portal page will be another shell over the same views.
 */
import { ApiError, createApi, keyStore } from './api.js';
import { h, replace } from './dom.js';
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
const notice = document.getElementById('notice');

let timers = [];
let noticeTimer;

function notify(message, kind = 'info') {
  notice.textContent = message;
  notice.className = `notice ${kind}`;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    notice.textContent = '';
    notice.className = 'notice';
  }, 6000);
}

function describe(error) {
  if (error instanceof ApiError) return `${error.message} (${error.status} ${error.code})`;
  // fetch() rejects with a TypeError when the server cannot be reached at all.
  if (error instanceof TypeError && /fetch/i.test(error.message))
    return `Could not reach hookpost: ${error.message}`;
  return `This page failed: ${error.message}`;
}

const ctx = {
  api: createApi(store, () => showSignIn('The key was refused (401). Sign in again.')),
  notify,
  /** Runs an action, showing its API error instead of throwing. */
  async run(action) {
    try {
      return await action();
    } catch (error) {
      notify(describe(error), 'error');
      return undefined;
    }
  },
  /** Repeats `fn` every `ms` while this view is shown. */
  every(fn, ms) {
    timers.push(setInterval(() => fn().catch((e) => notify(describe(e), 'error')), ms));
  },
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
};

const ROUTES = [
  [/^#\/pipeline$/, (q) => pipelineView(ctx, view, q)],
  [/^#\/endpoints$/, (q) => endpointsView(ctx, view, q)],
  [/^#\/endpoints\/([^/?]+)$/, (_q, id) => endpointView(ctx, view, decodeURIComponent(id))],
  [/^#\/dead-letters$/, (q) => deadLettersView(ctx, view, q)],
  [/^#\/deliveries$/, (q) => deliveriesView(ctx, view, q)],
  [/^#\/deliveries\/([^/?]+)$/, (_q, id) => deliveryView(ctx, view, decodeURIComponent(id))],
];

async function route() {
  for (const t of timers) clearInterval(t);
  timers = [];
  if (!store.get()) return showSignIn();
  const hash = location.hash || '#/pipeline';
  const [path, search = ''] = hash.split('?');
  for (const a of nav.querySelectorAll('a')) {
    a.toggleAttribute('aria-current', a.getAttribute('href') === path);
    if (a.hasAttribute('aria-current')) a.setAttribute('aria-current', 'page');
  }
  const match = ROUTES.map(([re, render]) => [re.exec(path), render]).find(([m]) => m);
  if (!match) {
    replace(
      view,
      h('h1', { tabindex: '-1' }, 'Not found'),
      h('p', {}, h('a', { href: '#/pipeline' }, 'Back to the pipeline')),
    );
    return;
  }
  const [m, render] = match;
  replace(view, h('p', { class: 'muted' }, 'Loading…'));
  view.setAttribute('aria-busy', 'true');
  try {
    await render(new URLSearchParams(search), ...m.slice(1));
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) {
      replace(
        view,
        h('h1', { tabindex: '-1' }, 'Something went wrong'),
        h('p', { class: 'error', role: 'alert' }, describe(error)),
      );
    }
  } finally {
    view.removeAttribute('aria-busy');
  }
  // Move focus to the new view's heading so keyboard and screen-reader users land on it.
  if (document.activeElement === document.body || document.activeElement?.closest('nav'))
    view.querySelector('h1')?.focus();
}

function showSignIn(message = '') {
  for (const t of timers) clearInterval(t);
  timers = [];
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

window.addEventListener('hashchange', route);
if (store.get()) signedIn();
else showSignIn();
