/**
 * The body the fault tests behind a proxy or a pooler share: a steady load (steady-load.ts) to a
 * new endpoint until deliveries flow, an outage that lasts `outageMs` (`breakIt`), `mendIt`, and
 * the wait for the first 202 after it; `check` then asserts on what callers saw, with the load
 * still running, and the load is stopped whatever `check` does.
 */
import { TOKEN, waitFor } from '../helpers.js';
import { type Answer, type SteadyLoad, sentBetween, startSteadyLoad } from './steady-load.js';

export interface OutageScenario {
  apiUrl: string;
  receiver: { url: string; requests: unknown[] };
  /** Prefix of the load's event ids. */
  prefix: string;
  outageMs: number;
  breakIt(): Promise<void>;
  mendIt(): Promise<void>;
}

export interface OutageSeen {
  load: SteadyLoad;
  /** When the outage began, when mending began, and when it was done (epoch ms). */
  brokenAt: number;
  mendingAt: number;
  mendedAt: number;
  /** Answers to requests sent during the outage (before mending began). */
  during: Answer[];
  /** The longest any of those took to be answered (ms). */
  slowest: number;
  /** When the first request sent after mending was accepted (epoch ms). */
  back: number;
}

export async function runThroughOutage(
  scenario: OutageScenario,
  check: (seen: OutageSeen) => Promise<void> | void,
): Promise<void> {
  const res = await fetch(`${scenario.apiUrl}/v1/endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: scenario.receiver.url }),
  });
  const endpointId = ((await res.json()) as { id: string }).id;
  const load = startSteadyLoad({
    baseUrl: scenario.apiUrl,
    token: TOKEN,
    endpointId,
    prefix: scenario.prefix,
    intervalMs: 200,
  });
  try {
    await waitFor('deliveries flowing', () => scenario.receiver.requests.length >= 50, 30000);
    await scenario.breakIt();
    const brokenAt = Date.now();
    await waitFor('the outage', () => Date.now() - brokenAt >= scenario.outageMs, scenario.outageMs + 7000);
    const mendingAt = Date.now();
    await scenario.mendIt();
    const mendedAt = Date.now();
    const acceptedAfter = () => load.answers.filter((a) => a.sentAt >= mendedAt && a.status === 202);
    await waitFor('202 again', () => acceptedAfter().length > 0, 10000);
    const during = sentBetween(load.answers, brokenAt, mendingAt);
    await check({
      load,
      brokenAt,
      mendingAt,
      mendedAt,
      during,
      slowest: Math.max(0, ...during.map((a) => a.answeredAt - a.sentAt)),
      back: Math.min(...acceptedAfter().map((a) => a.answeredAt)),
    });
  } finally {
    await load.stop();
  }
}
