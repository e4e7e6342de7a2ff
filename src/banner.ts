/** The start banner: where hookpost listens, where the token is, and a quick start that works. */
import type { AdminToken } from './admin-token.js';
import type { Config } from './config.js';

export function printBanner(config: Config, admin: AdminToken): void {
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const base = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${config.port}`;
  const tokenLine =
    admin.source === 'environment'
      ? 'Admin token: from HOOKPOST_ADMIN_TOKEN (not shown)'
      : admin.generated
        ? `Admin token (generated now, shown once; saved in ${admin.file}):\n  ${admin.token}`
        : `Admin token: in ${admin.file}`;
  const tokenExpr = admin.source === 'environment' ? '$HOOKPOST_ADMIN_TOKEN' : `$(cat '${admin.file}')`;
  const lines = [
    '',
    `hookpost is listening on ${base}`,
    tokenLine,
    '',
    'Quick start (copy and paste):',
    `  TOKEN=${tokenExpr}`,
    `  EP=$(curl -s -X POST ${base}/v1/endpoints -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `    -d '{"url": "https://example.com/webhooks", "event_types": ["order.created"]}' | sed -E 's/.*"id":"([^"]+)".*/\\1/')`,
    `  curl -s -X POST ${base}/v1/deliveries -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `    -d "{\\"endpoint_id\\": \\"$EP\\", \\"event_type\\": \\"order.created\\", \\"payload\\": {\\"order_id\\": 42}}"`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
