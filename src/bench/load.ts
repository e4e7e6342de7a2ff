/**
 * The bench's producer: enqueues through the public batch API as fast as it can (two requests
 * in flight) or paced at a steady rate, and remembers when each message was acknowledged.
 */
import type { Pool } from 'undici';
import { matchesHalf, orderEventOf } from './filter-load.js';

export interface ApiClient {
  api: Pool;
  token: string;
}

export interface LoadOptions {
  payloadBytes: number;
  /** Offered load in deliveries/s; undefined = as fast as possible. */
  rate: number | undefined;
  /** With K: item i carries ordering_key `k${i % K}` (sent one at a time per endpoint and key). */
  orderingKeys?: number | undefined;
  /**
   * Fan-out: each item is an order event (filter-load.ts) without endpoint_id, for every endpoint
   * of the producer's tenant; `filtered` are the endpoints with HALF_FILTER.
   */
  fanOut?: { endpointIndex: Map<string, number>; filtered: Set<string> } | undefined;
}

export const now = () => performance.timeOrigin + performance.now();

export function payloadOf(index: number, bytes: number): string {
  const head = `{"n":${index},"pad":"`;
  return `${head}${'x'.repeat(Math.max(0, bytes - head.length - 2))}"}`;
}

export async function call(h: ApiClient, method: 'GET' | 'POST', path: string, body?: unknown) {
  const res = await h.api.request({
    method,
    path,
    headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = (await res.body.json()) as Record<string, unknown>;
  if (res.statusCode >= 300) throw new Error(`${method} ${path} → ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

export interface Enqueued {
  /**
   * message id → time the API acknowledged it (committed); with fan-out, one entry per delivery,
   * `<message id>@<endpoint index>` (the receiver's key for it).
   */
  acked: Map<string, number>;
  /** Fan-out: deliveries the filters kept back, and answers whose `filtered` was not as expected. */
  filtered: number;
  wrongFiltered: number;
  started: number;
  finished: number;
}

/** Sends items in batches of up to 1000, `parallel` requests at a time, or paced at `rate`/s. */
export async function enqueueAll(
  h: ApiClient,
  endpointIds: string[],
  opts: LoadOptions,
  total: number,
): Promise<Enqueued> {
  const acked = new Map<string, number>();
  const started = now();
  let next = 0;
  let filtered = 0;
  let wrongFiltered = 0;
  const fanOut = opts.fanOut;
  const sendBatch = async (count: number) => {
    // Built as text: the producer's own JSON encoding is not what is being measured.
    const first = next;
    const items = Array.from({ length: count }, () => {
      const i = next++;
      if (fanOut) return `{"event_type":"bench.event","payload":${orderEventOf(i, opts.payloadBytes)}}`;
      const endpoint = endpointIds[i % endpointIds.length];
      const key = opts.orderingKeys ? `"ordering_key":"k${i % opts.orderingKeys}",` : '';
      return `{"endpoint_id":"${endpoint}","event_type":"bench.event",${key}"payload":${payloadOf(i, opts.payloadBytes)}}`;
    });
    const request = `{"items":[${items.join(',')}]}`;
    const body = (await call(h, 'POST', '/v1/deliveries/batch', request)) as {
      results: { message_id: string; deliveries: { endpoint_id: string }[]; filtered: string[] }[];
    };
    const at = now();
    if (!fanOut) for (const r of body.results) acked.set(r.message_id, at);
    else
      body.results.forEach((r, k) => {
        for (const d of r.deliveries)
          acked.set(`${r.message_id}@${fanOut.endpointIndex.get(d.endpoint_id)}`, at);
        filtered += r.filtered.length;
        // Every filtered endpoint lets the event through exactly when it matches HALF_FILTER.
        const expected = matchesHalf(first + k) ? 0 : fanOut.filtered.size;
        if (r.filtered.length !== expected || r.filtered.some((id) => !fanOut.filtered.has(id)))
          wrongFiltered++;
      });
  };
  if (opts.rate === undefined) {
    const parallel = 2;
    const workers = Array.from({ length: parallel }, async () => {
      while (next < total) await sendBatch(Math.min(1000, total - next));
    });
    await Promise.all(workers);
  } else {
    // Paced: every 10 ms, send whatever the target rate says is due by now.
    const inFlight: Promise<void>[] = [];
    while (next < total) {
      const due = Math.min(total, Math.floor(((now() - started) / 1000) * opts.rate));
      if (due > next) inFlight.push(sendBatch(Math.min(1000, due - next)));
      await new Promise((r) => setTimeout(r, 10));
    }
    await Promise.all(inFlight);
  }
  return { acked, started, finished: now(), filtered, wrongFiltered };
}
