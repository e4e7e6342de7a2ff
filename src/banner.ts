/**
 * The start banner: where hookpost listens, where the token is, and a quick start that ends with
 * a delivery arriving, verified, at `hookpost listen` on this machine.
 */
import { fileURLToPath } from 'node:url';
import type { AdminToken } from './admin-token.js';
import type { Config } from './config.js';

/** The port the quick start's `hookpost listen` receives on. */
export const QUICK_START_LISTEN_PORT = 9000;

// The launcher by absolute path: the banner's commands work whatever folder they are pasted in.
const BIN = fileURLToPath(new URL('../../bin/hookpost.js', import.meta.url));

/** Single-quotes a value for a POSIX shell. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * The quick-start commands, one per line, for the API at `base`: README.md prints the same lines
 * (test/cli/quick-start.test.ts checks it and runs them). `hookpost listen --subscribe` creates
 * the endpoint and says at once why it cannot; the wait ends when it is ready or has exited, and
 * nothing is sent after it exited.
 */
export function quickStartLines(base: string, tokenExpr: string, listenCommand: string): string[] {
  const receiver = `http://127.0.0.1:${QUICK_START_LISTEN_PORT}/`;
  return [
    `HOOKPOST_URL=${base}`,
    `TOKEN=${tokenExpr}`,
    `${listenCommand} listen --port ${QUICK_START_LISTEN_PORT} --api "$HOOKPOST_URL" --subscribe order.created &   # subscribes itself, verifies`,
    `until curl -s ${receiver} >/dev/null; do kill -0 $! 2>/dev/null || break; sleep 0.2; done   # ready, or it said why not`,
    `kill -0 $! 2>/dev/null && curl -s -w '\\n' -X POST "$HOOKPOST_URL/v1/deliveries" -H "Authorization: Bearer $TOKEN" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '{"event_type": "order.created", "payload": {"type": "order.created", "data": {"order_id": 42}}}'`,
    'sleep 1',
  ];
}

export function printBanner(config: Config, admin: AdminToken): void {
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const base = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${config.port}`;
  const tokenLine =
    admin.source === 'environment'
      ? 'Admin token: from HOOKPOST_ADMIN_TOKEN (not shown)'
      : admin.generated
        ? `Admin token (generated now, shown once; saved in ${admin.file}):\n  ${admin.token}`
        : `Admin token: in ${admin.file}`;
  const tokenExpr =
    admin.source === 'environment' ? '$HOOKPOST_ADMIN_TOKEN' : `$(cat ${shellQuote(admin.file ?? '')})`;
  // listen --subscribe finds the admin token in this data dir, wherever the commands are pasted.
  const listenCommand =
    admin.source === 'environment'
      ? `node ${shellQuote(BIN)}`
      : `HOOKPOST_DATA_DIR=${shellQuote(config.dataDir)} node ${shellQuote(BIN)}`;
  const privateTargets = config.allowPrivateTargets
    ? 'HOOKPOST_ALLOW_PRIVATE_TARGETS=true: endpoints may be on 127.0.0.1 and private networks (local development only).'
    : 'First restart with HOOKPOST_ALLOW_PRIVATE_TARGETS=true (e.g. `HOOKPOST_ALLOW_PRIVATE_TARGETS=true npm start`):\n' +
      'endpoints on 127.0.0.1 and private networks are refused by default, so API callers cannot reach them.';
  const lines = [
    '',
    `hookpost is listening on ${base}`,
    tokenLine,
    '',
    'Quick start: a delivery to a local receiver, verified (paste into another terminal).',
    privateTargets,
    ...quickStartLines(base, tokenExpr, listenCommand).map((l) => `  ${l}`),
    'hookpost listen then prints: <time>  msg_…  order.created  verified  51 bytes; `kill %1` stops it.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
