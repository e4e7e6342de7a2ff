/** The contract's error body, `{"error": {"code", "message", "details"?}}`, as a typed value. */

/** What every hookpost error response carries. */
export interface HookpostErrorBody {
  /** snake_case and stable: branch on this, not on the message. */
  code: string;
  /** For people; never contains a payload or a secret. */
  message: string;
  /** E.g. `[{field, message}]` for validation errors, `{index, pointer}` for a schema mismatch. */
  details?: unknown;
}

/**
 * A non-2xx answer from hookpost. `status` is the HTTP status; `code`, `message` and `details`
 * come from the response body. An answer that is not in the contract's format (a proxy's HTML
 * 502, an empty 503) gets the code `unexpected_response`.
 */
export class HookpostError extends Error implements HookpostErrorBody {
  override readonly name = 'HookpostError';
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  /** Seconds the server asked the caller to wait (`Retry-After`), when it said. */
  readonly retryAfterSeconds?: number;

  constructor(status: number, body: HookpostErrorBody, retryAfterSeconds?: number) {
    super(body.message);
    this.status = status;
    this.code = body.code;
    if (body.details !== undefined) this.details = body.details;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }

  /**
   * The error for a response whose body has already been read (`body` is its parsed JSON or its
   * text, as openapi-fetch hands it over).
   */
  static fromResponse(response: Response, body: unknown): HookpostError {
    const retryAfter = retryAfterSeconds(response.headers.get('retry-after'), Date.now());
    const inner = (body as { error?: unknown } | null | undefined)?.error;
    if (isErrorBody(inner)) return new HookpostError(response.status, inner, retryAfter);
    const statusText = response.statusText ? ` ${response.statusText}` : '';
    return new HookpostError(
      response.status,
      {
        code: 'unexpected_response',
        message: `HTTP ${response.status}${statusText} without a hookpost error body`,
      },
      retryAfter,
    );
  }
}

function isErrorBody(value: unknown): value is HookpostErrorBody {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'string' && typeof v.message === 'string';
}

/**
 * `Retry-After` as seconds from `nowMs`: delta seconds or an HTTP date (RFC 9110 §10.2.3);
 * undefined when absent or unreadable.
 */
export function retryAfterSeconds(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - nowMs) / 1000);
}
