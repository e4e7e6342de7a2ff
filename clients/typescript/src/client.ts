/**
 * createHookpostClient(): openapi-fetch over hookpost's generated types, with the error side of
 * every result turned into a HookpostError, Retry-After honoured, and the conveniences a service
 * calls most (batch enqueue with an idempotency key, lists as async iterators).
 */
import createClient, {
  type Client,
  type ClientPathsWithMethod,
  type FetchResponse,
  type MaybeOptionalInit,
  type MethodResponse,
} from 'openapi-fetch';
import { HookpostError } from './errors.js';
import type { paths } from './generated/openapi.js';
import { type FetchFunction, type RetryOptions, retryingFetch } from './retry.js';

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';
type Media = `${string}/${string}`;
type RawClient = Client<paths, Media>;

// openapi-fetch's own rule for "the second argument is optional when nothing in it is required"
// (it does not export InitParam), so the wrapped methods infer exactly as the originals do.
// biome-ignore lint/complexity/noBannedTypes: `{} extends Pick<T, K>` is how "K is optional" is asked
type RequiredKeysOfHelper<T> = { [K in keyof T]: {} extends Pick<T, K> ? never : K }[keyof T];
type RequiredKeysOf<T> = RequiredKeysOfHelper<T> extends undefined ? never : RequiredKeysOfHelper<T>;
type InitParam<Init> =
  RequiredKeysOf<Init> extends never
    ? [(Init & { [key: string]: unknown })?]
    : [Init & { [key: string]: unknown }];

/** openapi-fetch's `{data, error, response}` with `error` as a HookpostError. */
export type HookpostResult<R> = R extends { error?: never }
  ? R
  : { data?: never; error: HookpostError; response: Response };

/** `client.GET(path, init)` and the other methods: typed by path, as in openapi-fetch. */
export type HookpostMethod<M extends Method> = <
  P extends ClientPathsWithMethod<RawClient, M>,
  I extends MaybeOptionalInit<paths[P], M>,
>(
  url: P,
  ...init: InitParam<I>
) => Promise<HookpostResult<OperationResult<paths[P][M], I>>>;

/** openapi-fetch's result type for one operation (`paths[P][M]`, known to be one for these P). */
type OperationResult<Operation, Init> =
  Operation extends Record<string | number, unknown> ? FetchResponse<Operation, Init, Media> : never;

type GetPath = ClientPathsWithMethod<RawClient, 'get'>;
type GetData<P extends GetPath> = MethodResponse<RawClient, 'get', P>;

/** The GET routes that answer `{data: [...], next_cursor}` (keyset-paginated lists). */
export type ListPath = {
  [P in GetPath]: GetData<P> extends { data: unknown[]; next_cursor: string | null } ? P : never;
}[GetPath];

/** One element of a list's `data`. */
export type ListItem<P extends ListPath> = GetData<P> extends { data: (infer T)[] } ? T : never;

type BatchBody = paths['/v1/deliveries/batch']['post']['requestBody']['content']['application/json'];
/** One item of `POST /v1/deliveries/batch`. */
export type BatchItem = BatchBody['items'][number];

export interface HookpostClientOptions {
  /** Where hookpost listens, e.g. `https://hookpost.internal`. */
  baseUrl: string;
  /** An API key (`hpk_…`) or the admin token; sent as `Authorization: Bearer <token>`. */
  token: string;
  /** A fetch to use instead of `globalThis.fetch` (tests, proxies, instrumentation). */
  fetch?: FetchFunction;
  /** Retry-After on 429 and 503: on by default (2 retries, waits up to 10 s each); `false` turns it off. */
  retry?: RetryOptions | false;
  /** Headers sent with every request (besides Authorization). */
  headers?: Record<string, string>;
}

export interface HookpostClient {
  GET: HookpostMethod<'get'>;
  POST: HookpostMethod<'post'>;
  PUT: HookpostMethod<'put'>;
  PATCH: HookpostMethod<'patch'>;
  DELETE: HookpostMethod<'delete'>;
  /**
   * Every element of a keyset-paginated list, page after page (following `next_cursor`), as an
   * async iterator. Throws a HookpostError when a page fails.
   */
  list<P extends ListPath>(
    path: P,
    ...init: InitParam<MaybeOptionalInit<paths[P], 'get'>>
  ): AsyncIterable<ListItem<P>>;
  /**
   * `POST /v1/deliveries/batch` (up to 1000 items). With `idempotencyKey`, item `i` is stored
   * under `<key>:<i>`: the same batch sent again answers 200 with the same ids and queues
   * nothing new, and a 503 is retried safely.
   */
  enqueueBatch(
    items: BatchItem[],
    options?: { idempotencyKey?: string; signal?: AbortSignal },
  ): Promise<HookpostResult<FetchResponse<paths['/v1/deliveries/batch']['post'], object, Media>>>;
}

function toResult<R extends { data?: unknown; error?: unknown; response: Response }>(result: R) {
  if (result.response.ok) return result;
  return { error: HookpostError.fromResponse(result.response, result.error), response: result.response };
}

/**
 * A client for the hookpost API at `baseUrl`, typed from its OpenAPI document:
 * `client.POST('/v1/deliveries', {body})`, `client.GET('/v1/deliveries/{id}', {params: {path: {id}}})`
 * → `{data, error, response}`, where `error` is a HookpostError.
 */
export function createHookpostClient(options: HookpostClientOptions): HookpostClient {
  const fetchFn: FetchFunction = options.fetch ?? ((request) => globalThis.fetch(request));
  const raw = createClient<paths, Media>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, Authorization: `Bearer ${options.token}` },
    fetch: retryingFetch(fetchFn, options.retry ?? {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: one body for five typed methods; the types are above
  const wrap = (method: (...args: any[]) => Promise<any>) => async (url: string, init?: object) =>
    toResult(await method(url, init));
  const client = {
    GET: wrap(raw.GET),
    POST: wrap(raw.POST),
    PUT: wrap(raw.PUT),
    PATCH: wrap(raw.PATCH),
    DELETE: wrap(raw.DELETE),
    list: (path: string, init?: { params?: { query?: Record<string, unknown> } }) =>
      paginate(client.GET as unknown as PageGetter, path, init),
    enqueueBatch: (items: BatchItem[], opts: { idempotencyKey?: string; signal?: AbortSignal } = {}) =>
      client.POST('/v1/deliveries/batch', {
        body: { items },
        params:
          opts.idempotencyKey === undefined ? {} : { header: { 'Idempotency-Key': opts.idempotencyKey } },
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
  };
  return client as unknown as HookpostClient;
}

type PageGetter = (
  path: string,
  init: object,
) => Promise<{ data?: { data: unknown[]; next_cursor: string | null }; error?: HookpostError }>;

async function* paginate(
  get: PageGetter,
  path: string,
  init: { params?: { query?: Record<string, unknown> } } = {},
): AsyncGenerator<unknown> {
  let cursor: string | undefined;
  for (;;) {
    const query = { ...init.params?.query, ...(cursor === undefined ? {} : { cursor }) };
    const { data, error } = await get(path, { ...init, params: { ...init.params, query } });
    if (error) throw error;
    yield* data!.data;
    const next = data!.next_cursor;
    if (next === null || next === undefined) return;
    // A cursor that does not move would page forever; the API never answers one, but a proxy
    // that caches by path alone could.
    if (next === cursor) throw new Error(`${path}: next_cursor ${next} repeats the previous page's`);
    cursor = next;
  }
}
