/**
 * One attempt's response, read through undici's handler interface (`Agent.dispatch`) instead of
 * `Agent.request`. request() wraps every response in a Readable body stream, an async iterator
 * and an AbortSignal listener; for a webhook answer of a few bytes that machinery cost ~9 µs of
 * the ~48 µs undici spends per POST on loopback (docs/performance.md, change 5 of the "late
 * evening" session). Here the status, Retry-After and the first bytes arrive as plain callbacks.
 */
import type { Dispatcher } from 'undici';

/** Past this many response bytes we stop reading and drop the connection. */
export const MAX_DRAIN_BYTES = 64 * 1024;

export interface ReadResponse {
  statusCode: number;
  retryAfter: string | undefined;
  /** The first `snippetBytes` of the body (whatever arrived before the end or the cut). */
  snippet: string;
}

/** Why an attempt's response was cut short by us rather than by the network. */
class DrainLimit extends Error {}

export class ResponseReader implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private abortReason: Error | null = null;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  private total = 0;
  private settled = false;
  readonly done: Promise<ReadResponse>;
  private resolve!: (response: ReadResponse) => void;
  private reject!: (error: Error) => void;

  constructor(private readonly snippetBytes: number) {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /**
   * Ends the attempt (deadline or shutdown). Before undici has put the request on a socket there
   * is no controller yet: the reason is kept and applied in onRequestStart, as request() does.
   */
  abort(reason: Error): void {
    if (this.settled) return;
    if (this.controller) this.controller.abort(reason);
    else this.abortReason = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // an informational answer; the final one follows
    this.statusCode = statusCode;
    const retryAfter = headers['retry-after'];
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.keptBytes < this.snippetBytes) {
      const part = chunk.subarray(0, this.snippetBytes - this.keptBytes);
      this.kept.push(part);
      this.keptBytes += part.length;
    }
    this.total += chunk.length;
    // Small bodies are drained so the connection is reused; huge or endless ones drop it.
    if (this.total > MAX_DRAIN_BYTES) controller.abort(new DrainLimit());
  }

  onResponseEnd(): void {
    this.finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    // Once the status line has arrived the attempt is answered: a deadline, a reset or our own
    // drain limit cutting the body short changes nothing but the snippet's length.
    if (this.statusCode !== 0) this.finish();
    else if (!this.settled) {
      this.settled = true;
      this.reject(error);
    }
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    // PostgreSQL text cannot hold NUL; a partner's binary error page must not break the write.
    const snippet = Buffer.concat(this.kept).toString('utf8').replaceAll('\u0000', '');
    this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, snippet });
  }
}
