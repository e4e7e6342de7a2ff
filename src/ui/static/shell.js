/**
 * What the admin page and the partner portal share: the context the views use (api, notify, run,
 * every, navigate) and a hash router over the views. Each page is a thin shell over this: it
 * brings its own key store, sign-in and list of routes.
 */
import { ApiError, createApi, StaleViewError } from './api.js';
import { h, replace } from './dom.js';

/** A message for people from whatever an action threw. */
export function describe(error) {
  if (error instanceof ApiError) return `${error.message} (${error.status} ${error.code})`;
  // fetch() rejects with a TypeError when the server cannot be reached at all.
  if (error instanceof TypeError && /fetch/i.test(error.message))
    return `Could not reach hookpost: ${error.message}`;
  return `This page failed: ${error.message}`;
}

/**
 * createShell({store, view, nav, notice, routes, home, onUnauthorized, options}): {ctx, route,
 * stop}. `routes` is [[regexp over the hash path, (ctx, view, query, ...groups) => Promise]];
 * `options` is merged into ctx for the views (e.g. which filters a page hides).
 */
export function createShell({ store, view, nav, notice, routes, home, onUnauthorized, options = {} }) {
  let timers = [];
  let noticeTimer;
  // Which route() is current: a view still rendering when the next one starts (its requests sent
  // with the session just switched from, say) must neither draw over its successor nor leave a
  // refresh running behind it.
  let generation = 0;

  /**
   * Reports on an action. With `near` (an element of the form or section the action belongs to)
   * the message goes into that form's or section's own status line, where the person is looking,
   * so no toast ever covers the form it reports on; without, in the page-wide toast (messages
   * that belong to no form, such as a failed background refresh).
   */
  function notify(message, kind = 'info', near = undefined) {
    const target = near?.closest?.('form, section');
    if (target) {
      let line = [...target.children].find((c) => c.classList.contains('inline-notice'));
      if (!line) {
        line = h('p', { class: 'inline-notice', role: 'status', 'aria-live': 'polite' });
        target.append(line);
      }
      line.textContent = message;
      line.className = `inline-notice ${kind}`;
      return;
    }
    notice.textContent = message;
    notice.className = `notice ${kind}`;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => {
      notice.textContent = '';
      notice.className = 'notice';
    }, 6000);
  }

  function stop() {
    generation += 1;
    for (const t of timers) clearInterval(t);
    timers = [];
  }

  const ctx = {
    ...options,
    api: createApi(store, onUnauthorized),
    notify,
    /** Runs an action, showing its API error (near `near`, see notify) instead of throwing. */
    async run(action, near = undefined) {
      try {
        return await action();
      } catch (error) {
        if (!(error instanceof StaleViewError)) notify(describe(error), 'error', near);
        return undefined;
      }
    },
    navigate(hash) {
      if (location.hash === hash) route();
      else location.hash = hash;
    },
  };

  async function route() {
    stop();
    if (!store.get()) return onUnauthorized();
    const hash = location.hash || home;
    const [path, search = ''] = hash.split('?');
    for (const a of nav.querySelectorAll('a')) {
      a.toggleAttribute('aria-current', a.getAttribute('href') === path);
      if (a.hasAttribute('aria-current')) a.setAttribute('aria-current', 'page');
    }
    const match = routes.map(([re, render]) => [re.exec(path), render]).find(([m]) => m);
    if (!match) {
      replace(
        view,
        h('h1', { tabindex: '-1' }, 'Not found'),
        h('p', {}, h('a', { href: home }, 'Back to the start')),
      );
      return;
    }
    const [m, render] = match;
    // Each view draws into its own slot and asks through its own api: once the next route() has
    // replaced the slot, a late answer draws into a detached element, the view's further requests
    // are never sent (StaleViewError) and its refreshes never started.
    const mine = generation;
    const slot = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    const isCurrent = () => mine === generation;
    const routeCtx = {
      ...ctx,
      api: createApi(store, onUnauthorized, isCurrent),
      every(fn, ms) {
        if (!isCurrent()) return;
        const quietly = (e) => (e instanceof StaleViewError ? undefined : notify(describe(e), 'error'));
        timers.push(setInterval(() => fn().catch(quietly), ms));
      },
    };
    replace(view, slot);
    view.setAttribute('aria-busy', 'true');
    try {
      await render(routeCtx, slot, new URLSearchParams(search), ...m.slice(1).map(decodeURIComponent));
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) {
        replace(
          slot,
          h('h1', { tabindex: '-1' }, 'Something went wrong'),
          h('p', { class: 'error', role: 'alert' }, describe(error)),
        );
      }
    } finally {
      if (isCurrent()) view.removeAttribute('aria-busy');
    }
    if (!isCurrent()) return;
    // Move focus to the new view's heading so keyboard and screen-reader users land on it.
    if (document.activeElement === document.body || document.activeElement?.closest('nav'))
      view.querySelector('h1')?.focus();
  }

  window.addEventListener('hashchange', route);
  return { ctx, route, stop };
}
