/**
 * One attempt's response, read through undici's handler interface (`Agent.dispatch`) instead of
 * `Agent.request`. request() wraps every response in a Readable body stream, an async iterator
 * and an AbortSignal listener; for a webhook answer of a few bytes that machinery cost ~9 µs of
 * the ~48 µs undici spends per POST on loopback (docs/performance.md, change 5 of the "late
 * evening" session). Here the status, Retry-After and the first bytes arrive as plain callbacks.
 *
 * The callbacks are the ones undici's HTTP/1 client itself calls (onConnect, onHeaders, onData,
 * onComplete, onError; typed as deprecated in undici 7 in favour of onRequestStart & co.). A
 * handler with the newer names is wrapped per request in an adapter that builds a controller
 * object and parses every response's headers and trailers into objects; this reader needs one
 * header, and only on an answer that is not a success.
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
  private abortRequest: ((reason: Error) => void) | null = null;
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
   * is no abort function yet: the reason is kept and applied in onConnect, as request() does.
   */
  abort(reason: Error): void {
    if (this.settled) return;
    if (this.abortRequest) this.abortRequest(reason);
    else this.abortReason = reason;
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.abortRequest = abort;
    if (this.abortReason) abort(this.abortReason);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // an informational answer; the final one follows
    this.statusCode = statusCode;
    if (statusCode >= 300) this.retryAfter = headerValue(rawHeaders, 'retry-after');
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.keptBytes < this.snippetBytes) {
      const part = chunk.subarray(0, this.snippetBytes - this.keptBytes);
      this.kept.push(part);
      this.keptBytes += part.length;
    }
    this.total += chunk.length;
    // Small bodies are drained so the connection is reused; huge or endless ones drop it.
    if (this.total > MAX_DRAIN_BYTES) this.abortRequest?.(new DrainLimit());
    return true;
  }

  onComplete(): void {
    this.finish();
  }

  onError(error: Error): void {
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
    const text = (this.kept.length === 1 ? this.kept[0]! : Buffer.concat(this.kept)).toString('utf8');
    const snippet = text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
    this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, snippet });
  }
}

/** The first value of header `name` (lower case) in undici's raw [name, value, …] list. */
function headerValue(rawHeaders: (Buffer | string)[], name: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = rawHeaders[i]!;
    if (key.length === name.length && key.toString('latin1').toLowerCase() === name) {
      return rawHeaders[i + 1]!.toString('latin1');
    }
  }
  return undefined;
}
