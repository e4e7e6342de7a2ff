/**
 * `hookpost listen`'s options, checked before anything listens: a bad one is a usage error (exit
 * 2, with the command's help). `--subscribe` also finds hookpost's API and admin token the way
 * the other commands find the database: HOOKPOST_ADMIN_TOKEN, else the data dir's admin-token.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import type { ListenOptions } from './listen.js';
import { UsageError } from './usage-error.js';

export interface ListenArgs {
  port?: string;
  host?: string;
  secret?: string;
  subscribe?: string;
  api?: string;
  status?: string;
  'delay-ms'?: string;
}

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${raw}`);
  }
  return value;
}

/** The API the banner would print for this configuration (0.0.0.0 and :: are reached on loopback). */
export function defaultApiUrl(config: Pick<Config, 'host' | 'port'>): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

async function adminToken(config: Config): Promise<{ token: string; source: string }> {
  if (config.adminToken) return { token: config.adminToken, source: 'HOOKPOST_ADMIN_TOKEN' };
  const file = path.join(config.dataDir, 'admin-token');
  const token = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (!token) {
    throw new UsageError(
      `--subscribe needs hookpost's admin token: there is none in ${file} and HOOKPOST_ADMIN_TOKEN is unset. ` +
        'Run this in the folder where you ran `npm start`, or set HOOKPOST_DATA_DIR or HOOKPOST_ADMIN_TOKEN',
    );
  }
  return { token, source: file };
}

/** The receiver's options from the command line; `config` only when --subscribe needs it. */
export async function listenOptions(args: ListenArgs, config: () => Config): Promise<ListenOptions> {
  if (args.secret !== undefined && args.subscribe !== undefined) {
    throw new UsageError('--secret and --subscribe do not go together: --subscribe learns the secret itself');
  }
  if (args.api !== undefined && args.subscribe === undefined) {
    throw new UsageError('--api goes with --subscribe (it is where the endpoint is created)');
  }
  const options: ListenOptions = {
    port: integer('port', args.port, 9000, 1, 65535),
    host: args.host ?? '127.0.0.1',
    secret: args.secret,
    status: integer('status', args.status, 200, 200, 599),
    delayMs: integer('delay-ms', args['delay-ms'], 0, 0, 600_000),
  };
  if (args.subscribe !== undefined) {
    const eventTypes = args.subscribe
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== '' && t !== '*');
    const resolved = config();
    let api = args.api ?? defaultApiUrl(resolved);
    try {
      api = new URL(api).origin;
    } catch {
      throw new UsageError(`--api must be hookpost's URL, like http://127.0.0.1:8080, got ${args.api}`);
    }
    const { token, source } = await adminToken(resolved);
    options.subscribe = { api, token, tokenSource: source, eventTypes };
  }
  return options;
}
