/** Serving a Hono app on a TCP port: the API and the metrics listener, in `runRoles` and the bench. */
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

/** A listener that could not be opened, with a message naming the setting to change. */
export class ListenError extends Error {}

/** Why `host:port` could not be bound, in words that name the variables (portVariable: PORT, …). */
export function describeListenError(
  error: unknown,
  host: string,
  port: number,
  portVariable: string,
): string {
  const code = (error as { code?: string }).code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the address is already in use (another hookpost running?); stop it or set ${portVariable} to a free port`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: HOST=${host} is not an address of this machine; use 127.0.0.1, 0.0.0.0 or one of its own addresses`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges); set ${portVariable} to 1024 or above`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on ${where}: HOST=${host} does not resolve to an address`;
    default:
      return `cannot listen on ${where} (HOST, ${portVariable}): ${code ?? (error as Error).message}`;
  }
}

export interface ServedApp {
  /** The bound port (useful when asked for port 0). */
  port: number;
  /** Stops accepting, closes idle keep-alive connections, resolves once the server is closed. */
  close(): Promise<void>;
}

/** Resolves once listening; rejects when the port cannot be bound. */
export async function serveApp(app: Hono, port: number, host: string): Promise<ServedApp> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      }),
  };
}
