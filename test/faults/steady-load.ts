/**
 * A steady enqueue load against a running hookpost, as a caller that follows the docs: every
 * batch has its own event_ids, and a batch answered 503 (or not answered) is sent again with the
 * same ids until it is accepted. Every response is recorded with when it was sent and answered,
 * so a test can say what callers saw in each phase of a failover.
 */

export interface Answer {
  sentAt: number;
  answeredAt: number;
  /** 0 when no response came (connection refused or reset). */
  status: number;
  retryAfter: string | null;
  code?: string;
}

export interface SteadyLoad {
  answers: Answer[];
  /** Message ids (webhook-id) of every accepted item. */
  accepted: Set<string>;
  /** Delivery ids of every accepted item. */
  deliveries: Set<string>;
  /** Stops sending (a batch under way finishes, or is abandoned after its current try). */
  stop(): Promise<void>;
}

export interface LoadOptions {
  baseUrl: string;
  token: string;
  endpointId: string;
  /** Concurrent callers; each sends a batch, then waits out the rest of its interval. */
  callers?: number;
  batchSize?: number;
  intervalMs?: number;
  /** Prefix of the event ids (unique per load). */
  prefix: string;
}

export function startSteadyLoad(options: LoadOptions): SteadyLoad {
  const { callers = 4, batchSize = 5, intervalMs = 100 } = options;
  const answers: Answer[] = [];
  const accepted = new Set<string>();
  const deliveries = new Set<string>();
  let running = true;
  let serial = 0;
  const send = async (items: unknown[]): Promise<boolean> => {
    const sentAt = Date.now();
    let status = 0;
    let retryAfter: string | null = null;
    let code: string | undefined;
    try {
      const res = await fetch(`${options.baseUrl}/v1/deliveries/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items }),
        signal: AbortSignal.timeout(15000),
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      const body = (await res.json()) as {
        results?: { message_id: string; deliveries: { id: string }[] }[];
        error?: { code: string };
      };
      code = body.error?.code;
      if (status === 200 || status === 202) {
        for (const r of body.results ?? []) {
          accepted.add(r.message_id);
          for (const d of r.deliveries) deliveries.add(d.id);
        }
      }
    } catch {
      // no response: counted as status 0 and sent again
    }
    answers.push({ sentAt, answeredAt: Date.now(), status, retryAfter, code });
    return status === 200 || status === 202;
  };
  const caller = async (n: number) => {
    while (running) {
      const started = Date.now();
      const items = Array.from({ length: batchSize }, () => ({
        endpoint_id: options.endpointId,
        event_type: 'failover.test',
        event_id: `${options.prefix}-${n}-${serial++}`,
        payload: { serial },
      }));
      // The same event ids until accepted: a batch whose commit landed but whose answer was lost
      // comes back 200 with the same ids, nothing queued twice.
      while (!(await send(items))) {
        if (!running) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      const rest = intervalMs - (Date.now() - started);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
  };
  const all = Array.from({ length: callers }, (_, n) => caller(n));
  return {
    answers,
    accepted,
    deliveries,
    async stop() {
      running = false;
      await Promise.all(all);
    },
  };
}

/** Answers whose request was sent in [from, to). */
export function sentBetween(answers: Answer[], from: number, to: number): Answer[] {
  return answers.filter((a) => a.sentAt >= from && a.sentAt < to);
}

/** A count of answers by status, for messages: {"202": 310, "503": 41}. */
export function byStatus(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}
