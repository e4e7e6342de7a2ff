/**
 * A TCP proxy in front of PostgreSQL that a test can cut (every connection dropped, new ones
 * refused, as when the server is down) and restore, without touching the shared test server.
 * It can also lose one answer: a statement runs and commits, and its connection dies before the
 * client hears of it. For that it follows the server's side of the wire protocol (type byte,
 * length, body) on every connection. And it counts round trips: how often a client sent again
 * after the server had answered (pipelined statements travel in one turn). It can also stand
 * for a TCP proxy with no server up: accept each connection and close it.
 */
import net from 'node:net';

export interface CuttableProxy {
  port: number;
  /** Points `url` (a postgres:// URL) at the proxy. */
  via(url: string): string;
  cut(): Promise<void>;
  /** From now until the next cut, nothing the server sends is forwarded; connections stay open. */
  stall(): void;
  /**
   * From now until restore(), every connection is accepted and closed at once, as HAProxy does
   * when none of its servers is up (open connections are dropped now).
   */
  closeOnAccept(): void;
  /**
   * New connections go to `port` from now on (a DNS name or proxy that now points at another
   * server); connections already open stay where they are.
   */
  retarget(port: number): void;
  /** Forwards again after a cut (listening again) or closeOnAccept(). */
  restore(): Promise<void>;
  /** Connections accepted so far (connection attempts that reached the proxy). */
  accepted(): number;
  /**
   * The next statement on any connection that changes rows and returns one containing the
   * bytes of `text` is never answered: its connection is closed right after the server commits
   * it (at its next idle ReadyForQuery). Resolves once that happened.
   */
  loseNextAnswerContaining(text: string): Promise<void>;
  /** Round trips so far, over all connections: client sends that follow an answer. */
  turns(): number;
  close(): Promise<void>;
}

const DATA_ROW = 0x44; // 'D'
const COMMAND_COMPLETE = 0x43; // 'C'
const READY_FOR_QUERY = 0x5a; // 'Z'
const SSL_REFUSED = 0x4e; // 'N', the one-byte answer to an SSLRequest

interface LoseAnswer {
  text: Buffer;
  done: () => void;
}

export async function startProxy(initialTarget: number): Promise<CuttableProxy> {
  let targetPort = initialTarget;
  const sockets = new Set<net.Socket>();
  let armed: LoseAnswer | undefined;
  let stalled = false;
  let closing = false;
  let turns = 0;
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    if (closing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream);
    let answered = true;
    client.on('data', () => {
      if (answered) turns++;
      answered = false;
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());

    let pending = Buffer.alloc(0);
    let started = false;
    // The result under way, held back while armed (see below).
    const held: Buffer[] = [];
    let doomed: LoseAnswer | undefined;
    upstream.on('data', (chunk: Buffer) => {
      if (stalled) return;
      pending = Buffer.concat([pending, chunk]);
      if (!started && pending.length > 0) {
        started = true;
        if (pending[0] === SSL_REFUSED) {
          client.write(pending.subarray(0, 1));
          pending = pending.subarray(1);
        }
      }
      const out: Buffer[] = [];
      while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
        const message = pending.subarray(0, 1 + pending.readInt32BE(1));
        pending = pending.subarray(message.length);
        const type = message[0];
        // While armed, a statement's result (its rows and completion, up to ReadyForQuery) is
        // held back until it is known not to be the one to lose. Everything before a result
        // passes: a describe step is answered without ReadyForQuery, and the client waits on it.
        const result = type === DATA_ROW || type === COMMAND_COMPLETE;
        if (held.length === 0 && !doomed && !(armed && result)) {
          out.push(message);
          continue;
        }
        held.push(message);
        if (
          armed &&
          type === COMMAND_COMPLETE &&
          // SELECT too: the claim is a SELECT over the UPDATE in its CTE (deliveries/claim.ts).
          /^(UPDATE|INSERT|DELETE|SELECT) [1-9]/.test(message.subarray(5, -1).toString()) &&
          held.some((m) => m[0] === DATA_ROW && m.includes(armed!.text))
        ) {
          doomed = armed;
          armed = undefined;
        }
        if (type === READY_FOR_QUERY) {
          if (doomed && message[5] === 0x49 /* 'I': idle, so committed */) {
            const { done } = doomed;
            doomed = undefined;
            if (out.length > 0) client.write(Buffer.concat(out));
            client.destroy();
            upstream.destroy();
            done();
            return;
          }
          if (!doomed) out.push(...held.splice(0));
        }
      }
      if (out.length > 0) {
        answered = true;
        client.write(Buffer.concat(out));
      }
    });
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const { port } = server.address() as net.AddressInfo;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      armed = undefined;
      stalled = false;
      for (const s of sockets) s.destroy();
    });
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.port = String(port);
      return u.toString();
    },
    cut: stop,
    stall() {
      stalled = true;
    },
    retarget(port: number) {
      targetPort = port;
    },
    closeOnAccept() {
      closing = true;
      for (const s of sockets) s.destroy();
    },
    async restore() {
      closing = false;
      if (!server.listening) await listen(port);
    },
    accepted: () => accepted,
    loseNextAnswerContaining: (text) =>
      new Promise<void>((done) => {
        armed = { text: Buffer.from(text), done };
      }),
    turns: () => turns,
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
