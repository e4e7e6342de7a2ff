/**
 * `hookpost listen`: a local webhook receiver for development, in the spirit of `stripe listen`
 * and `svix listen`. It checks each request's Standard Webhooks signature with the official
 * `standardwebhooks` library (the verifier partners are pointed at), prints one line per
 * delivery and answers 200, so the quick start ends with a verified delivery on screen.
 * `--subscribe` creates (or reuses) its own endpoint; `--status` and `--delay-ms` make it fail
 * or lag on demand, to see retries, dead letters and the circuit breaker at work.
 */
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { describeListenError, ListenError } from '../api/serve.js';
import { plural } from '../util/plural.js';
import { SubscribeError, type SubscribeOptions, subscribe } from './listen-endpoint.js';
import { UsageError } from './usage-error.js';

export interface ListenOptions {
  port: number;
  host: string;
  /** The endpoint's `whsec_…` secret; without it signatures are shown as not checked. */
  secret: string | undefined;
  /** The status every request is answered with (default 200). */
  status?: number;
  /** How long to wait before answering, in milliseconds (default 0). */
  delayMs?: number;
  /** Make sure hookpost has an endpoint for this receiver, and verify with its secret. */
  subscribe?: Omit<SubscribeOptions, 'url'>;
}

// A receiver for local development: anything larger than hookpost's biggest payload is not ours.
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Checks the options before anything listens: a bad secret is a usage error, not 500 bad lines. */
export function checkListenSecret(secret: string | undefined): Webhook | undefined {
  if (secret === undefined) return undefined;
  if (secret === '') {
    throw new UsageError(
      '--secret is empty: was the endpoint created? (`hookpost listen --subscribe TYPES` creates one itself)',
    );
  }
  if (!secret.startsWith('whsec_')) {
    throw new UsageError("--secret must be the endpoint's secret as hookpost showed it (whsec_…)");
  }
  try {
    return new Webhook(secret);
  } catch {
    throw new UsageError('--secret is not a valid whsec_ secret (base64 after the prefix)');
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Standard Webhooks payloads carry their type as `type`; hookpost delivers bodies untouched. */
function eventType(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { type?: unknown };
    return typeof parsed?.type === 'string' ? parsed.type : '(no type in payload)';
  } catch {
    return '(not JSON)';
  }
}

/**
 * One request's line: time, webhook-id, event type, `seq N` for a keyed delivery
 * (hookpost-sequence), signature verdict, size, and the answer when it is not a plain 200.
 */
export function describeDelivery(
  req: http.IncomingMessage,
  body: Buffer,
  verifier: Webhook | undefined,
  answer: { status: number; delayMs: number } = { status: 200, delayMs: 0 },
): string {
  const id = header(req, 'webhook-id');
  let verdict: string;
  if (id === undefined) verdict = 'not a webhook (no webhook-id header)';
  else if (!verifier) verdict = 'signature not checked (pass --secret whsec_…)';
  else {
    try {
      verifier.verify(body, {
        'webhook-id': id,
        'webhook-timestamp': header(req, 'webhook-timestamp') ?? '',
        'webhook-signature': header(req, 'webhook-signature') ?? '',
      });
      verdict = 'verified';
    } catch (error) {
      verdict = `NOT VERIFIED (${(error as Error).message})`;
    }
  }
  const sequence = header(req, 'hookpost-sequence');
  const answered =
    answer.status === 200 && answer.delayMs === 0
      ? []
      : [`answered ${answer.status}${answer.delayMs ? ` after ${answer.delayMs} ms` : ''}`];
  return [
    new Date().toISOString(),
    id ?? '-',
    eventType(body),
    ...(sequence === undefined ? [] : [`seq ${sequence}`]),
    verdict,
    plural(body.length, 'byte'),
    ...answered,
  ].join('  ');
}

/** Runs the receiver until SIGINT/SIGTERM; resolves with the exit code. */
export async function runListen(options: ListenOptions, out: NodeJS.WritableStream = process.stdout) {
  let verifier = checkListenSecret(options.secret);
  const answer = { status: options.status ?? 200, delayMs: options.delayMs ?? 0 };
  // Requests wait until the subscription is made: a readiness probe (the quick start's `until
  // curl`) answered before it would race the first delivery. A failed one answers 503.
  let setUp!: (ok: boolean) => void;
  const ready = new Promise<boolean>((resolve) => {
    setUp = resolve;
  });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', async () => {
      if (!(await ready)) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('hookpost listen: not subscribed\n');
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('hookpost listen: POST webhooks here\n');
        return;
      }
      out.write(`${describeDelivery(req, Buffer.concat(chunks), verifier, answer)}\n`);
      if (answer.delayMs > 0) await new Promise((r) => setTimeout(r, answer.delayMs));
      const ok = answer.status >= 200 && answer.status < 300;
      res
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(ok ? '{"received":true}' : `{"error":"hookpost listen --status ${answer.status}"}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new ListenError(describeListenError(error, options.host, options.port, '--port'))),
    );
    server.listen(options.port, options.host, resolve);
  });
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${shown}:${options.port}/`;
  if (options.subscribe) {
    try {
      const made = await subscribe({ ...options.subscribe, url });
      verifier = new Webhook(made.secret);
      const types = options.subscribe.eventTypes.length
        ? options.subscribe.eventTypes.join(', ')
        : 'every event';
      out.write(
        `hookpost listen: endpoint ${made.endpointId} ${made.created ? 'created' : 'reused (secret rotated)'} ` +
          `for ${url}, subscribed to ${types}\n`,
      );
    } catch (error) {
      if (!(error instanceof SubscribeError)) throw error;
      setUp(false);
      await new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      });
      process.stderr.write(`hookpost listen: ${error.message}\n`);
      return 1;
    }
  }
  setUp(true);
  const answering =
    answer.status === 200 && !answer.delayMs
      ? ''
      : `; answering ${answer.status}${answer.delayMs ? ` after ${answer.delayMs} ms` : ''}`;
  const checking = verifier
    ? "signatures verified with the endpoint's secret"
    : 'signatures not checked: pass --secret whsec_… or --subscribe';
  out.write(`hookpost listen: receiving webhooks on ${url} (${checking}${answering}; Ctrl-C stops)\n`);
  return new Promise<number>((resolve) => {
    const stop = () => {
      server.close(() => resolve(0));
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
