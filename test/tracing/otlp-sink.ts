/**
 * A real OTLP/HTTP trace receiver on loopback for the tracing tests: takes POST /v1/traces in
 * both protocols, decodes protobuf with protobufjs from the OTLP trace proto definitions (written
 * out below, field numbers as in opentelemetry-proto) and JSON as it is, and keeps the spans in
 * one shape.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";
package opentelemetry.proto;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
  fixed32 flags = 16; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  repeated Event events = 11; uint32 dropped_events_count = 12;
  repeated Link links = 13; uint32 dropped_links_count = 14; Status status = 15;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
  message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; }
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const RequestType = protobuf
  .parse(PROTO, { keepCase: false })
  .root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

export type Value = string | number | boolean;

/** One received span, whichever protocol brought it. */
export interface SinkSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Record<string, Value>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  events: string[];
  links: { traceId: string; spanId: string }[];
  service: string;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded OTLP documents are walked field by field
type Doc = any;

function hex(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value.toLowerCase(); // OTLP/JSON writes ids as hex
  return Buffer.from(value as Uint8Array).toString('hex');
}

function anyValue(v: Doc): Value {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  return JSON.stringify(v);
}

function attributes(list: Doc[] | undefined): Record<string, Value> {
  return Object.fromEntries((list ?? []).map((kv: Doc) => [kv.key, anyValue(kv.value ?? {})]));
}

/** Spans from a decoded ExportTraceServiceRequest (protobufjs's object or OTLP/JSON: same names). */
function spansOf(doc: Doc): SinkSpan[] {
  const spans: SinkSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: Number(s.kind ?? 0),
          attributes: attributes(s.attributes),
          status: Number(s.status?.code ?? 0),
          events: (s.events ?? []).map((e: Doc) => e.name),
          links: (s.links ?? []).map((l: Doc) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          service,
        });
      }
    }
  }
  return spans;
}

export interface OtlpSink {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT should say. */
  endpoint: string;
  spans: SinkSpan[];
  /** The content types of the export requests received. */
  contentTypes: Set<string>;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const spans: SinkSpan[] = [];
  const contentTypes = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.add(type);
      const doc = type.includes('json')
        ? JSON.parse(body.toString('utf8'))
        : RequestType.toObject(RequestType.decode(body), { longs: String });
      spans.push(...spansOf(doc));
      res.writeHead(200, { 'content-type': type }).end(type.includes('json') ? '{}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
