/**
 * `hookpost listen --subscribe TYPES`: the receiver makes sure hookpost has an endpoint for it,
 * through the same /v1 API as curl, and verifies with that endpoint's secret. Like `stripe
 * listen`, it saves the first-run user the create-and-copy-the-secret step, and every way that
 * step can fail (hookpost not running, token refused, loopback targets not allowed) ends at once
 * with what to do instead of a receiver waiting for deliveries that cannot come.
 */

/** What the receiver subscribes with. */
export interface SubscribeOptions {
  /** hookpost's API, e.g. http://127.0.0.1:8080. */
  api: string;
  token: string;
  /** Where the admin token came from, for the message when it is refused. */
  tokenSource: string;
  /** This receiver's URL, the endpoint's `url`. */
  url: string;
  /** Event types to subscribe to; empty: every event of the tenant. */
  eventTypes: string[];
}

export interface Subscription {
  endpointId: string;
  secret: string;
  created: boolean;
}

/** A subscription that cannot be made; the message says what to do. */
export class SubscribeError extends Error {}

interface EndpointJson {
  id: string;
  url: string;
  tenant_id: string;
  signature_scheme: string;
  secret?: string;
}

/** The parts of hookpost's answers this module reads. */
interface Answer {
  status: number;
  json: {
    error?: { message?: string };
    id?: string;
    secret?: string;
    data?: EndpointJson[];
    next_cursor?: string | null;
  } | null;
}

type Call = (method: string, path: string, body?: unknown) => Promise<Answer>;

function caller(options: SubscribeOptions): Call {
  return async (method, path, body) => {
    let res: Response;
    try {
      res = await fetch(new URL(path, options.api), {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw new SubscribeError(
        `cannot reach hookpost at ${options.api}: is it running? Start it in another terminal with\n` +
          '  HOOKPOST_ALLOW_PRIVATE_TARGETS=true npm start\n' +
          '(or pass --api with the address its banner prints)',
      );
    }
    const text = await res.text();
    let json: Answer['json'] = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the status says enough
    }
    if (res.status === 401 || res.status === 403) {
      throw new SubscribeError(
        `hookpost at ${options.api} refused the admin token from ${options.tokenSource} (${res.status}): ` +
          'run this in the folder where hookpost was started, or set HOOKPOST_ADMIN_TOKEN to its token',
      );
    }
    return { status: res.status, json };
  };
}

/** The refusal in words: a private-address refusal says exactly how to restart hookpost. */
function refusal(options: SubscribeOptions, what: string, answer: Answer): never {
  const message = answer.json?.error?.message ?? `HTTP ${answer.status}`;
  if (answer.status === 400 && message.includes('HOOKPOST_ALLOW_PRIVATE_TARGETS')) {
    throw new SubscribeError(
      `hookpost at ${options.api} refuses endpoints on ${new URL(options.url).hostname}: it runs without ` +
        'HOOKPOST_ALLOW_PRIVATE_TARGETS=true (by default API callers may not make it reach this machine ' +
        'or private networks).\nStop it (Ctrl-C in its terminal), start it again with\n' +
        '  HOOKPOST_ALLOW_PRIVATE_TARGETS=true npm start\nand paste the quick start again.',
    );
  }
  throw new SubscribeError(`could not ${what}: hookpost answered ${answer.status}: ${message}`);
}

/** The v1 endpoint of the default tenant already pointing at `url`, if there is one. */
async function findEndpoint(call: Call, url: string): Promise<EndpointJson | undefined> {
  let cursor: string | null = null;
  do {
    const page = await call(
      'GET',
      `/v1/endpoints?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (page.status !== 200 || !page.json?.data) return undefined;
    const found = page.json.data.find(
      (e) => e.url === url && e.tenant_id === 'default' && e.signature_scheme === 'v1',
    );
    if (found) return found;
    cursor = page.json.next_cursor ?? null;
  } while (cursor);
  return undefined;
}

/**
 * Creates the endpoint, or reuses the one a previous `listen` on this URL created (so its
 * deliveries, dead letters and replays carry on): subscribed to `eventTypes`, enabled, and with a
 * freshly rotated secret that this process learns (the old ones keep signing for the grace period,
 * which the verifier accepts too).
 */
export async function subscribe(options: SubscribeOptions): Promise<Subscription> {
  const call = caller(options);
  const existing = await findEndpoint(call, options.url);
  if (!existing) {
    const created = await call('POST', '/v1/endpoints', {
      url: options.url,
      event_types: options.eventTypes,
      description: 'hookpost listen (local development receiver)',
    });
    if (created.status !== 201) refusal(options, `create an endpoint for ${options.url}`, created);
    return { endpointId: String(created.json?.id), secret: String(created.json?.secret), created: true };
  }
  const id = encodeURIComponent(existing.id);
  // The URL again, unchanged: so a hookpost restarted without private targets refuses it now,
  // rather than dead-lettering every delivery to it later.
  const patched = await call('PATCH', `/v1/endpoints/${id}`, {
    url: options.url,
    event_types: options.eventTypes,
    enabled: true,
  });
  if (patched.status !== 200) refusal(options, `update endpoint ${existing.id}`, patched);
  const rotated = await call('POST', `/v1/endpoints/${id}/rotate-secret`);
  if (rotated.status !== 200) refusal(options, `rotate the secret of endpoint ${existing.id}`, rotated);
  return { endpointId: existing.id, secret: String(rotated.json?.secret), created: false };
}
