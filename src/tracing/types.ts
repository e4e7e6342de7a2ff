/**
 * The shapes of hookpost's tracing interface (tracing.ts re-exports them): apart from tracing.ts
 * so that the SDK's side (otel.ts) can implement them without importing the module that loads it.
 */

/** How tracing was configured (config.ts): on when an OTLP endpoint is set. */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL (default http/protobuf). */
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_SERVICE_NAME, default `hookpost`. */
  serviceName: string;
}

/** Span attribute values hookpost sets: ids, counts, codes; never a payload or a secret. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** A span hookpost ends itself. */
export interface ChildSpan {
  /** Ends the span; with an error, its status is ERROR and the error's class is recorded. */
  end(error?: unknown): void;
}

/** The SERVER span of one API request. */
export interface RequestSpan {
  /** This span's context as a W3C traceparent: what is stored with the messages it enqueues. */
  readonly traceparent: string;
  /** A child span of this one (the database write). */
  child(name: string, attributes?: SpanAttributes): ChildSpan;
  /** Ends the span with the response status (5xx: ERROR). */
  end(statusCode: number): void;
}

/** What an attempt span is made of. */
export interface AttemptInfo {
  deliveryId: string;
  endpointId: string;
  tenantId: string;
  attempt: number;
  /** The endpoint URL; the span keeps it without its query string. */
  url: string;
  /** The parent: the queue row's (a replay's) traceparent, else the message's; null: a new trace. */
  parent: string | null;
  /** The message's own trace, linked when the parent is a replay's. */
  link: string | null;
}

/** Where one attempt's HTTP exchange stands; the sender reports the moments it observes. */
export type HttpMoment = 'dns.lookup' | 'connect' | 'tls.handshake' | 'request.sent' | 'response.first_byte';

/** How one attempt ended, as the span records it. */
export interface AttemptEnd {
  statusCode: number | undefined;
  /** Null on success. */
  errorClass: string | null;
}

/** The span of one delivery attempt. */
export interface AttemptSpan {
  /** Sent as `traceparent` to endpoints with propagate_trace. */
  readonly traceparent: string;
  readonly traceId: string;
  readonly spanId: string;
  /** False when the sampler dropped it: nothing it records is exported, so the sender skips timing. */
  readonly recording: boolean;
  /** An HTTP moment at `at` (performance.now()); `reused` says the connection was an idle one. */
  moment(name: HttpMoment, at: number): void;
  /** Marks whether the request went out on a connection opened for it. */
  connection(reused: boolean): void;
  end(result: AttemptEnd): void;
}

/** hookpost's tracer: spans for API requests and delivery attempts, exported over OTLP/HTTP. */
export interface Tracing {
  /** A SERVER span continuing the caller's `traceparent` header when it is valid. */
  requestSpan(name: string, traceparent: string | undefined, attributes: SpanAttributes): RequestSpan;
  /** A span for one delivery attempt (see AttemptInfo for its parent and link). */
  attemptSpan(info: AttemptInfo): AttemptSpan;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}
