/** Parent-side handle on the benchmark receiver worker. */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

export interface ReceiverStats {
  requests: number;
  duplicates: number;
  badSignatures: number;
  /** webhook-id → first arrival (ms since epoch, sub-ms precision). */
  arrivals: Map<string, number>;
}

export class BenchReceiver {
  private constructor(
    private readonly worker: Worker,
    readonly port: number,
  ) {}

  static async start(): Promise<BenchReceiver> {
    const worker = new Worker(new URL('./receiver-worker.js', import.meta.url));
    const [message] = (await once(worker, 'message')) as [{ port: number }];
    return new BenchReceiver(worker, message.port);
  }

  url(index: number): string {
    return `http://127.0.0.1:${this.port}/ep/${index}`;
  }

  setKeys(keys: Buffer[]): void {
    this.worker.postMessage({ type: 'keys', keys: keys.map((k) => k.toString('base64')) });
  }

  reset(): void {
    this.worker.postMessage({ type: 'reset' });
  }

  async stats(): Promise<ReceiverStats> {
    this.worker.postMessage({ type: 'stats' });
    for (;;) {
      const [message] = (await once(this.worker, 'message')) as [
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
    this.worker.postMessage({ type: 'take' });
    for (;;) {
      const [message] = (await once(this.worker, 'message')) as [
        { type: string; arrivals: [string, number][]; duplicates: number; badSignatures: number },
      ];
      if (message.type === 'taken') return message;
    }
  }

  private async count(): Promise<number> {
    this.worker.postMessage({ type: 'count' });
    for (;;) {
      const [message] = (await once(this.worker, 'message')) as [{ type: string; count: number }];
      if (message.type === 'count') return message.count;
    }
  }

  /** Polls the (cheap) count until `count` distinct deliveries arrived or `timeoutMs` passed. */
  async waitForCount(count: number, timeoutMs: number): Promise<ReceiverStats> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.count()) < count && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.stats();
  }

  async close(): Promise<void> {
    this.worker.postMessage({ type: 'close' });
    await once(this.worker, 'exit');
  }
}

/** The q-quantile (0..1) of unsorted numbers, nearest rank. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
