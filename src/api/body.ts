/** Reading request bodies: size limit (413), media type (415), UTF-8 and JSON syntax (400). */
import { isAscii } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { z } from 'zod';
import { jsonSyntaxErrorAt } from '../util/raw-json.js';
import { HttpError } from './errors.js';
import { humanIssueMessage } from './validation-messages.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

export interface JsonBody {
  text: string;
  value: unknown;
  /**
   * The body's bytes when it is all ASCII (the usual JSON: non-ASCII text escaped or absent), so
   * that an offset into `text` is the same offset into them: a payload span is then a view of
   * these bytes instead of a copy re-encoded from the text. Absent for any other body.
   */
  asciiBytes?: Buffer;
}

/**
 * Reads and parses a JSON body of at most `maxBytes`, keeping its text for raw-byte extraction.
 * `tooLargeMessage` is the 413's message when the caller's limit is not the body's own (a single
 * enqueue allows HOOKPOST_MAX_PAYLOAD_BYTES of payload plus room for the envelope): the user
 * is told the limit they configured, not the internal one.
 */
export async function readJsonBody(
  c: Context,
  maxBytes: number,
  tooLargeMessage?: string,
): Promise<JsonBody> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      'request body must be JSON (Content-Type: application/json)',
    );
  }
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) tooLarge(maxBytes, tooLargeMessage);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // The Node request, unless something read from it already (then through the web stream).
  const bytes =
    incoming && !incoming.readableDidRead && !incoming.readableEnded
      ? await readIncoming(incoming, maxBytes, tooLargeMessage)
      : await readLimited(c.req.raw, maxBytes, tooLargeMessage);
  // ASCII is valid UTF-8 whose characters are its bytes: a Latin-1 read makes the same string by a
  // copy, where the strict UTF-8 decoder costs ~5× as much (~0.7 ms per MB).
  const ascii = isAscii(bytes);
  let text: string;
  try {
    text = ascii ? bytes.toString('latin1') : decoder.decode(bytes);
  } catch {
    throw new HttpError(400, 'invalid_json', 'request body is not valid UTF-8');
  }
  try {
    return { text, value: JSON.parse(text), ...(ascii ? { asciiBytes: bytes } : {}) };
  } catch {
    // Position only: V8's message quotes the text around the fault, which may be a payload.
    throw invalidJson(text);
  }
}

function tooLarge(maxBytes: number, message?: string): never {
  throw tooLargeError(maxBytes, message);
}

function tooLargeError(maxBytes: number, message?: string): HttpError {
  return new HttpError(413, 'payload_too_large', message ?? `request body is larger than ${maxBytes} bytes`);
}

/**
 * readLimited on the Node request itself (served by @hono/node-server): the same bytes without a
 * web ReadableStream over it, which cost about 7% of the API's CPU at a steady 200 enqueues/s
 * (docs/performance.md, "Steady rates"). Past the limit the request is destroyed, as cancelling
 * the web stream did.
 */
function readIncoming(
  incoming: IncomingMessage,
  maxBytes: number,
  tooLargeMessage?: string,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxBytes) {
        incoming.off('data', onData);
        incoming.destroy();
        reject(tooLargeError(maxBytes, tooLargeMessage));
        return;
      }
      chunks.push(chunk);
    };
    incoming.on('data', onData);
    incoming.once('end', () => resolve(Buffer.concat(chunks, total)));
    incoming.once('error', reject);
  });
}

/** Streams the body and stops at the limit, so an oversized upload never sits in memory whole. */
async function readLimited(request: Request, maxBytes: number, tooLargeMessage?: string): Promise<Buffer> {
  if (!request.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      tooLarge(maxBytes, tooLargeMessage);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

function invalidJson(text: string): HttpError {
  const position = Math.max(0, jsonSyntaxErrorAt(text));
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return new HttpError(
    400,
    'invalid_json',
    `request body is not valid JSON (line ${line}, column ${column}, character ${position})`,
    { position, line, column },
  );
}

/**
 * Validates with a zod schema; the 400 names each offending field by its path and says what it
 * must be, in words (validation-messages.ts). An unknown field is named itself.
 */
export function validate<T>(schema: z.ZodType<T>, value: unknown, pathPrefix: (string | number)[] = []): T {
  const result = schema.safeParse(value, { error: humanIssueMessage });
  if (result.success) return result.data;
  const fieldName = (path: PropertyKey[]) => [...pathPrefix, ...path].map(String).join('.');
  const issues = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ field: fieldName([...issue.path, key]), message: 'is not a known field' }))
      : [{ field: fieldName(issue.path) || '(body)', message: issue.message }],
  );
  const first = issues[0]!;
  const where = first.field === '(body)' ? 'request body' : first.field;
  throw new HttpError(400, 'validation_failed', `${where}: ${first.message}`, issues);
}
