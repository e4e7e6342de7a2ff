/**
 * OpenTelemetry traces (docs/tracing.md), as hookpost's own small interface. Nothing here imports
 * an OpenTelemetry package: the SDK is loaded by startTracing(), with a dynamic import, only when
 * the configuration turns tracing on. Everywhere else a `Tracing | undefined` is passed down and
 * the hot path checks it once; with tracing off no module of the SDK is ever loaded.
 */

import type { AttemptSpan, Tracing, TracingConfig } from './types.js';

export type {
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

/** `trace_id` and `span_id` for a log line about a delivery; empty without a span. */
export function traceFields(span: AttemptSpan | undefined): { trace_id?: string; span_id?: string } {
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

/**
 * Loads the OpenTelemetry SDK and starts exporting; undefined when tracing is off. The import is
 * dynamic so that a process without tracing never loads (nor pays for) any of it.
 */
export async function startTracing(config: TracingConfig | undefined): Promise<Tracing | undefined> {
  if (config === undefined) return undefined;
  const { createOtelTracing } = await import('./otel.js');
  return createOtelTracing(config);
}
