/**
 * A free TCP port below Linux's ephemeral range (32768–60999). A port picked from that range,
 * released and handed to a child process a moment later can meanwhile be assigned by the OS to
 * another test's `listen(0)` receiver (then requests meant for hookpost reach the receiver).
 */
import net from 'node:net';

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freeFixedPort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (await isFree(port)) return port;
  }
}
