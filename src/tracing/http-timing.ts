/**
 * The HTTP client's timing for an attempt span (tracing on only): when the connection's name was
 * resolved, its TCP connection and its TLS handshake were done (a connection opened for this
 * attempt), when the request went out and when the first byte of the answer came back.
 *
 * undici pools connections, so a connection's moments are recorded on the socket when it opens
 * (a wrapped connector) and handed to the first attempt sent on it. Which attempt a socket
 * carries is learnt from undici's `undici:client:sendHeaders` diagnostics channel, published
 * synchronously right after undici calls that request's handler's onConnect: the reader marks
 * itself current there and the channel's message names the socket. Nothing here is used, and
 * the channel has no subscriber, while tracing is off.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';
import { ResponseReader } from '../dispatch/response-reader.js';
import type { AttemptSpan, HttpMoment } from './types.js';

/** A connection's opening moments (performance.now()), until the first attempt on it takes them. */
interface Opening {
  moments: [HttpMoment, number][];
  taken: boolean;
}

const openings = new WeakMap<object, Opening>();

/** The traced reader whose request undici is writing right now (see the header). */
let writing: TracedReader | null = null;
let subscribed = false;

function onSendHeaders(message: unknown): void {
  const reader = writing;
  writing = null;
  if (!reader) return;
  const { request, socket } = message as { request: { path?: string }; socket: object };
  // A guard against an aborted traced request whose headers were never published.
  if (request.path !== reader.path) return;
  reader.sent(openings.get(socket));
}

/** A response reader that reports the exchange's moments to the attempt's span. */
export class TracedReader extends ResponseReader {
  private answered = false;

  constructor(
    snippetBytes: number,
    private readonly span: AttemptSpan,
    /** The request's path, as undici's request object holds it. */
    readonly path: string,
  ) {
    super(snippetBytes);
    if (!subscribed) {
      subscribed = true;
      diagnostics.subscribe('undici:client:sendHeaders', onSendHeaders);
    }
  }

  override onConnect(abort: (reason?: Error) => void): void {
    writing = this;
    super.onConnect(abort);
  }

  /** The request is being written on a socket; `opening` when the socket was opened for it. */
  sent(opening: Opening | undefined): void {
    const fresh = opening !== undefined && !opening.taken;
    this.span.connection(!fresh);
    if (fresh) {
      opening.taken = true;
      for (const [name, at] of opening.moments) this.span.moment(name, at);
    }
    this.span.moment('request.sent', performance.now());
  }

  override onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (!this.answered) {
      this.answered = true;
      this.span.moment('response.first_byte', performance.now());
    }
    return super.onHeaders(statusCode, rawHeaders);
  }
}

type Connector = buildConnector.connector;

/** `connector` recording each new connection's DNS, TCP and TLS moments on its socket. */
export function timedConnector(connector: Connector): Connector {
  return (options, callback) => {
    const opening: Opening = { moments: [], taken: false };
    const at = (name: HttpMoment) => () => opening.moments.push([name, performance.now()]);
    const https = options.protocol === 'https:';
    const socket: unknown = connector(options, ((error: Error | null, connected: Socket | null) => {
      // Called from undici's own 'connect' (or 'secureConnect') listener, which runs before any
      // of ours and writes the first request at once: the last moment is taken here.
      if (connected) {
        at(https ? 'tls.handshake' : 'connect')();
        openings.set(connected, opening);
      }
      (callback as (error: Error | null, socket: Socket | null) => void)(error, connected);
    }) as buildConnector.Callback);
    // A socket of its own (not the proxy's tunnel): its events carry the earlier moments.
    if (socket && typeof (socket as Socket).once === 'function') {
      const s = socket as Socket;
      s.once('lookup', at('dns.lookup'));
      if (https) s.once('connect', at('connect'));
    }
  };
}
