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
