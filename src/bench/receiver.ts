/** Parent-side handle on the benchmark receiver process. */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { processCpuSeconds } from './proc-stat.js';

export interface ReceiverStats {
  requests: number;
  duplicates: number;
  badSignatures: number;
  /** webhook-id → first arrival (ms since epoch, sub-ms precision). */
  arrivals: Map<string, number>;
}

export class BenchReceiver {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly scheme: 'http' | 'https',
  ) {}

  /** With `tls` (PEM key, cert, and a CA to require client certificates): an HTTPS receiver. */
  static async start(tls?: { key: string; cert: string; ca?: string }): Promise<BenchReceiver> {
    // 'advanced' serialization: the arrivals list (up to a million pairs) goes over the channel
    // as structured clone, as it did between threads, rather than as one JSON string.
    const child = fork(new URL('./receiver-process.js', import.meta.url), [], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
      env: tls ? { ...process.env, BENCH_RECEIVER_TLS: JSON.stringify(tls) } : process.env,
    });
    const [message] = (await once(child, 'message')) as [{ port: number }];
    return new BenchReceiver(child, message.port, tls ? 'https' : 'http');
  }

  /** CPU seconds the receiver process has used so far (from /proc). */
  cpuSeconds(): number {
    return this.child.pid === undefined ? 0 : processCpuSeconds(this.child.pid);
  }

  url(index: number): string {
    return `${this.scheme}://127.0.0.1:${this.port}/ep/${index}`;
  }

  /** Each endpoint's signing key; `perEndpoint` counts a webhook-id once per endpoint (fan-out). */
  setKeys(keys: Buffer[], perEndpoint = false): void {
    this.child.send({ type: 'keys', keys: keys.map((k) => k.toString('base64')), perEndpoint });
  }

  reset(): void {
    this.child.send({ type: 'reset' });
  }

  async stats(): Promise<ReceiverStats> {
    this.child.send({ type: 'stats' });
    for (;;) {
      const [message] = (await once(this.child, 'message')) as [
        {
          type: string;
          requests: number;
          duplicates: number;
          badSignatures: number;
          arrivals: [string, number][];
        },
      ];
      if (message.type === 'stats') return { ...message, arrivals: new Map(message.arrivals) };
    }
  }

  /** The arrivals since the previous call, in arrival order, with the running error counts. */
  async take(): Promise<{ arrivals: [string, number][]; duplicates: number; badSignatures: number }> {
    this.child.send({ type: 'take' });
    for (;;) {
      const [message] = (await once(this.child, 'message')) as [
        { type: string; arrivals: [string, number][]; duplicates: number; badSignatures: number },
      ];
      if (message.type === 'taken') return message;
    }
  }

  private async count(): Promise<number> {
    this.child.send({ type: 'count' });
    for (;;) {
      const [message] = (await once(this.child, 'message')) as [{ type: string; count: number }];
      if (message.type === 'count') return message.count;
    }
  }

  /** Polls the (cheap) count until `count` distinct deliveries arrived or `timeoutMs` passed. */
  async waitUntilCount(count: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.count()) < count && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** waitUntilCount, then the stats. */
  async waitForCount(count: number, timeoutMs: number): Promise<ReceiverStats> {
    await this.waitUntilCount(count, timeoutMs);
    return this.stats();
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.send({ type: 'close' });
    await exited;
  }
}

/** The q-quantile (0..1) of unsorted numbers, nearest rank. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
