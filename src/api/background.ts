import type { ReplayProgress } from '../deliveries/paced-requeue.js';
import { errorFields, type Logger } from '../log.js';

/**
 * Work an API request starts and leaves running after it answers (a bulk replay). Shutdown
 * aborts it (a replay stops between batches and marks its audit row `interrupted`) and waits for
 * it to finish writing, before the database pool closes under it.
 */
export class BackgroundTasks {
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<unknown>>();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  track(task: Promise<unknown>): void {
    const settled = task.then(
      () => {},
      () => {},
    );
    this.running.add(settled);
    void settled.finally(() => this.running.delete(settled));
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await Promise.all(this.running);
  }
}

/**
 * Starts a paced run (bulk replay, resend) that lasts longer than a caller should hold a request
 * open: resolves with its progress once the first batch is committed (so a failure there still
 * shows in the answer), or with its outcome if it ends first. The rest continues in this process,
 * tracked by `background` so a graceful shutdown stops it between batches; how it ended is logged.
 */
export async function startPacedRun<O extends object>(
  deps: { background?: BackgroundTasks | undefined; log: Logger },
  what: string,
  auditId: string,
  start: (pace: { onProgress: (p: ReplayProgress) => void; signal: AbortSignal | undefined }) => Promise<O>,
  toProgress: (outcome: O) => ReplayProgress,
): Promise<ReplayProgress> {
  let firstBatch!: (p: ReplayProgress) => void;
  const firstProgress = new Promise<ReplayProgress>((resolve) => {
    firstBatch = resolve;
  });
  const run = start({ onProgress: (p) => firstBatch(p), signal: deps.background?.signal });
  deps.background?.track(run);
  run.then(
    (outcome) => deps.log.info({ auditId, ...(outcome as Record<string, unknown>) }, `${what} ended`),
    (error: unknown) => deps.log.error({ auditId, ...errorFields(error) }, `${what} failed`),
  );
  return Promise.race([firstProgress, run.then(toProgress)]);
}
