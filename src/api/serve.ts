/** Serving a Hono app on a TCP port: the API and the metrics listener, in `runRoles` and the bench. */
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

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
