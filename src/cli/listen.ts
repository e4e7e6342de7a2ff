/**
 * `hookpost listen`: a local webhook receiver for development, in the spirit of `stripe listen`
 * and `svix listen`. It checks each request's Standard Webhooks signature with the official
 * `standardwebhooks` library (the verifier partners are pointed at), prints one line per
 * delivery and answers 200, so the quick start ends with a verified delivery on screen.
 */
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { describeListenError, ListenError } from '../api/serve.js';
import { UsageError } from './usage-error.js';

export interface ListenOptions {
  port: number;
  host: string;
  /** The endpoint's `whsec_…` secret; without it signatures are shown as not checked. */
  secret: string | undefined;
}

// A receiver for local development: anything larger than hookpost's biggest payload is not ours.
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Checks the options before anything listens: a bad secret is a usage error, not 500 bad lines. */
export function checkListenSecret(secret: string | undefined): Webhook | undefined {
  if (secret === undefined) return undefined;
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

/** One request's line: time, webhook-id, event type, signature verdict, size. */
export function describeDelivery(
  req: http.IncomingMessage,
  body: Buffer,
  verifier: Webhook | undefined,
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
  return [new Date().toISOString(), id ?? '-', eventType(body), verdict, `${body.length} bytes`].join('  ');
}

/** Runs the receiver until SIGINT/SIGTERM; resolves with the exit code. */
export async function runListen(options: ListenOptions, out: NodeJS.WritableStream = process.stdout) {
  const verifier = checkListenSecret(options.secret);
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
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('hookpost listen: POST webhooks here\n');
        return;
      }
      out.write(`${describeDelivery(req, Buffer.concat(chunks), verifier)}\n`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new ListenError(describeListenError(error, options.host, options.port, '--port'))),
    );
    server.listen(options.port, options.host, resolve);
  });
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  out.write(
    `hookpost listen: receiving webhooks on http://${shown}:${options.port}/ ` +
      `(${verifier ? 'signatures verified with the given secret' : 'signatures not checked: pass --secret whsec_…'}; Ctrl-C stops)\n`,
  );
  return new Promise<number>((resolve) => {
    const stop = () => {
      server.close(() => resolve(0));
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
