/** `hookpost start` as the database fault tests run it: against their own servers, on a port of their own. */
import path from 'node:path';
import { type HookpostProcess, runHookpost, untilListening } from '../cli/process.js';
import { TOKEN } from '../helpers.js';
import { freeFixedPort } from './ports.js';

/**
 * Starts `hookpost start` on `databaseUrl` (its data dir under `root`, the admin token TOKEN,
 * private targets allowed, a 200 ms poll, `env` on top) and resolves once it listens (a process
 * that does not get there is killed, see untilListening).
 */
export async function startHookpostOn(
  databaseUrl: string,
  root: string,
  env: Record<string, string> = {},
): Promise<{ hookpost: HookpostProcess; apiUrl: string }> {
  const apiPort = await freeFixedPort();
  const hookpost = runHookpost(['start'], {
    DATABASE_URL: databaseUrl,
    PORT: String(apiPort),
    HOOKPOST_ADMIN_TOKEN: TOKEN,
    HOOKPOST_ALLOW_PRIVATE_TARGETS: 'true',
    HOOKPOST_DATA_DIR: path.join(root, 'hookpost'),
    HOOKPOST_POLL_INTERVAL_MS: '200',
    ...env,
  });
  await untilListening(hookpost);
  return { hookpost, apiUrl: `http://127.0.0.1:${apiPort}` };
}
