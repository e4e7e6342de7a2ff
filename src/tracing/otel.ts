/**
 * The OpenTelemetry SDK behind tracing.ts's interface: loaded only by startTracing(), when tracing
 * is on. Spans go through a BatchSpanProcessor to the OTLP/HTTP exporter of the configured
 * protocol; the sampler, the batch processor and the exporter read their standard OTEL_*
 * variables themselves (OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_*). No global
 * provider or context manager is registered: every parent is passed explicitly (a stored
 * traceparent is the only context an attempt hours later has), so nothing is paid per await.
 */
import {
  type Attributes,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { shownUrl } from '../util/url.js';
import { VERSION } from '../version.js';
import type {
  AttemptEnd,
  AttemptInfo,
  AttemptSpan,
  ChildSpan,
  HttpMoment,
  RequestSpan,
  SpanAttributes,
  Tracing,
  TracingConfig,
} from './types.js';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent as a remote span context; undefined when absent, malformed or all zeros. */
export function parseTraceparent(value: string | null | undefined): SpanContext | undefined {
  const match = value === null || value === undefined ? null : TRACEPARENT.exec(value.trim());
  if (!match || match[1] === 'ff') return undefined;
  const context = { traceId: match[2]!, spanId: match[3]!, traceFlags: Number.parseInt(match[4]!, 16) & 1 };
  return trace.isSpanContextValid(context) ? { ...context, isRemote: true } : undefined;
}

/** A span context as the traceparent header writes it (version 00, sampled flag only). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
}

/** The parent context of a span whose parent is a traceparent (none: a new trace). */
function parentContext(traceparent: string | null | undefined) {
  const parent = parseTraceparent(traceparent);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

/** Ends `span` as failed by `error`: its class only, never its message (it may quote a value). */
function failed(span: Span, error: unknown): void {
  const name = (error as { name?: unknown } | null)?.name;
  const errorClass = typeof name === 'string' ? name : typeof error;
  span.setAttribute('error.type', errorClass);
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorClass });
}

class OtelAttemptSpan implements AttemptSpan {
  readonly traceparent: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly recording: boolean;

  constructor(private readonly span: Span) {
    const context = span.spanContext();
    this.recording = span.isRecording();
    this.traceparent = formatTraceparent(context);
    this.traceId = context.traceId;
    this.spanId = context.spanId;
  }

  moment(name: HttpMoment, at: number): void {
    // A number below the time origin is read by the SDK as performance.now() time.
    this.span.addEvent(name, at);
  }

  connection(reused: boolean): void {
    this.span.setAttribute('hookpost.connection.reused', reused);
  }

  end(result: AttemptEnd): void {
    if (result.statusCode !== undefined)
      this.span.setAttribute('http.response.status_code', result.statusCode);
    if (result.errorClass !== null) {
      this.span.setAttribute('error.type', result.errorClass);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: result.errorClass });
    }
    this.span.end();
  }
}

class OtelTracing implements Tracing {
  constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  requestSpan(name: string, traceparent: string | undefined, attributes: SpanAttributes): RequestSpan {
    const span = this.tracer.startSpan(
      name,
      { kind: SpanKind.SERVER, attributes: attributes as Attributes },
      parentContext(traceparent),
    );
    const context = trace.setSpan(ROOT_CONTEXT, span);
    const tracer = this.tracer;
    return {
      traceparent: formatTraceparent(span.spanContext()),
      child(childName: string, childAttributes?: SpanAttributes): ChildSpan {
        const child = tracer.startSpan(
          childName,
          { kind: SpanKind.CLIENT, attributes: childAttributes as Attributes },
          context,
        );
        return {
          end(error?: unknown) {
            if (error !== undefined) failed(child, error);
            child.end();
          },
        };
      },
      end(statusCode: number) {
        span.setAttribute('http.response.status_code', statusCode);
        if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  attemptSpan(info: AttemptInfo): AttemptSpan {
    const linked = info.link === null ? undefined : parseTraceparent(info.link);
    const links: Link[] = linked ? [{ context: linked, attributes: { 'hookpost.link': 'original' } }] : [];
    const span = this.tracer.startSpan(
      'webhook attempt',
      {
        kind: SpanKind.CLIENT,
        links,
        attributes: {
          'hookpost.delivery_id': info.deliveryId,
          'hookpost.endpoint_id': info.endpointId,
          'hookpost.tenant_id': info.tenantId,
          'hookpost.attempt': info.attempt,
          'http.request.method': 'POST',
          'url.full': shownUrl(info.url) ?? '',
        },
      },
      parentContext(info.parent),
    );
    return new OtelAttemptSpan(span);
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** The SDK, configured from `config` and the standard OTEL_* variables. */
export function createOtelTracing(config: TracingConfig): Tracing {
  const exporter = config.protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': VERSION }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  return new OtelTracing(provider, provider.getTracer('hookpost', VERSION));
}
