/**
 * The pages' only way to the server: the same /v1 API with the key the person typed in, kept in
 * sessionStorage (gone when the tab closes; never in a cookie, so no request carries it unasked).
 */

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/**
 * Thrown instead of sending a request for a view that is no longer shown (the person navigated
 * away, switched session or signed out meanwhile): its answer could only be drawn nowhere, and a
 * request made with the key now stored for what the old key listed (another tenant's endpoint,
 * say) would be refused.
 */
export class StaleViewError extends Error {
  constructor() {
    super('This view is no longer shown.');
  }
}

/** Where one page keeps its key; the portal will use its own name. */
export function keyStore(name) {
  return {
    get: () => sessionStorage.getItem(name),
    set: (key) => sessionStorage.setItem(name, key),
    clear: () => sessionStorage.removeItem(name),
  };
}

/** Drops empty values so a blank form field is not sent as `?x=`. */
function queryString(query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/**
 * createApi(store, onUnauthorized, isCurrent?): {get, post, patch, del}. Every call resolves to
 * the parsed JSON body or throws ApiError with the contract's error code and message; a 401 also
 * calls onUnauthorized (the key was revoked or mistyped). With `isCurrent` (a view's api), a call
 * made once it answers false throws StaleViewError and sends nothing.
 */
export function createApi(store, onUnauthorized, isCurrent = () => true) {
  async function call(method, path, { query, body } = {}) {
    if (!isCurrent()) throw new StaleViewError();
    const key = store.get();
    const headers = { authorization: `Bearer ${key ?? ''}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path + queryString(query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
    if (res.status === 204) return null;
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const error = data?.error ?? {};
      // Once per refused key: several calls of one view refused together sign out once.
      if (res.status === 401 && key && store.get() === key) onUnauthorized?.();
      throw new ApiError(
        res.status,
        error.code ?? 'http_error',
        error.message ?? `HTTP ${res.status}`,
        error.details,
      );
    }
    return data;
  }
  return {
    get: (path, query) => call('GET', path, { query }),
    post: (path, body) => call('POST', path, { body: body ?? {} }),
    patch: (path, body) => call('PATCH', path, { body }),
    del: (path) => call('DELETE', path),
  };
}

let documentPromise;

/** /openapi.json (no key needed), fetched once: forms read which filters a route takes from it. */
export function apiDocument() {
  documentPromise ??= fetch('/openapi.json').then((r) => r.json());
  return documentPromise;
}

/** The query parameters the document lists for GET `path`, without the paging ones. */
export async function listFilters(path) {
  const doc = await apiDocument();
  const params = doc.paths?.[path]?.get?.parameters ?? [];
  return params.filter((p) => p.in === 'query' && p.name !== 'cursor' && p.name !== 'limit');
}
