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

/** The quick-start commands, one per line, for the API at `base`. */
export function quickStartLines(base: string, tokenExpr: string, listenCommand: string): string[] {
  const receiver = `http://127.0.0.1:${QUICK_START_LISTEN_PORT}/`;
  return [
    `TOKEN=${tokenExpr}`,
    `RES=$(curl -s -X POST ${base}/v1/endpoints -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `  -d '{"url": "${receiver}", "event_types": ["order.created"]}')`,
    `EP=$(echo "$RES" | sed -E 's/.*"id":"([^"]+)".*/\\1/'); SECRET=$(echo "$RES" | sed -E 's/.*"secret":"([^"]+)".*/\\1/')`,
    `${listenCommand} listen --port ${QUICK_START_LISTEN_PORT} --secret "$SECRET" &   # a receiver that verifies`,
    `until curl -s ${receiver} >/dev/null; do sleep 0.2; done   # wait until it answers`,
    `curl -s -w '\\n' -X POST ${base}/v1/deliveries -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `  -d "{\\"endpoint_id\\": \\"$EP\\", \\"event_type\\": \\"order.created\\", \\"payload\\": {\\"type\\": \\"order.created\\", \\"data\\": {\\"order_id\\": 42}}}"`,
    'sleep 1   # hookpost listen prints: <time>  msg_…  order.created  verified  51 bytes; `kill %1` stops it',
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
    ...quickStartLines(base, tokenExpr, `node ${shellQuote(BIN)}`).map((l) => `  ${l}`),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
