/**
 * Readers for one environment variable each: config.ts hands them its `env` (process.env unless a
 * test passes another); a bad value throws a ConfigError that names the variable and what was expected.
 */
import net from 'node:net';

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function fail(name: string, value: string, expected: string): never {
  throw new ConfigError(`${name}=${JSON.stringify(value)} is invalid: expected ${expected}`);
}

export function numberVar(
  env: Env,
  name: string,
  fallback: number,
  opts: { min?: number; integer?: boolean } = {},
) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  const min = opts.min ?? 0;
  if (!Number.isFinite(value) || value < min || (opts.integer && !Number.isInteger(value))) {
    fail(name, raw, `${opts.integer ? 'an integer' : 'a number'} >= ${min}`);
  }
  return value;
}

/** A TCP port to listen on, 1 to 65535. */
export function portVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 65535) fail(name, raw, 'a TCP port, 1 to 65535');
  return value;
}

// RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens.
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The address to listen on: an IPv4 or IPv6 address, or a host name that resolves to one here. */
export function hostVar(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = raw.trim();
  if (net.isIP(value) === 0 && !HOST_NAME.test(value)) {
    fail(name, raw, 'an IP address (127.0.0.1, 0.0.0.0, ::) or a host name');
  }
  return value;
}

export function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const normalized = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(normalized)) return true;
  if (['false', '0', 'no'].includes(normalized)) return false;
  return fail(name, raw, 'true or false');
}

export function stringVar(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw;
}
