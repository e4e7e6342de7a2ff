/**
 * Two sections of the configuration read for config.ts, each from its own variables: tracing's
 * on/off decision (the OpenTelemetry SDK reads the rest of OTEL_* itself) and the retention
 * windows. Kept apart so config.ts stays the list of every setting, not every rule.
 */
import { boolVar, type Env, fail, numberVar, stringVar } from './config-vars.js';
import type { TracingConfig } from './tracing/tracing.js';

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/**
 * Tracing is on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not true. Only the on/off decision,
 * the protocol and the service name are read here; the SDK reads the other OTEL_* variables.
 */
export function tracing(env: Env): TracingConfig | undefined {
  const endpoint =
    stringVar(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? stringVar(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint === undefined || boolVar(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const name = stringVar(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (stringVar(env, name) ?? 'http/protobuf').trim();
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol))
    fail(name, protocol, OTLP_PROTOCOLS.join(' or '));
  return {
    protocol: protocol as TracingConfig['protocol'],
    serviceName: stringVar(env, 'OTEL_SERVICE_NAME')?.trim() ?? 'hookpost',
  };
}

/** Retention windows in days accept fractions (tests use 0.0005, about 43 s). */
export function retention(env: Env) {
  const positiveDays = (name: string, fallback: number) => {
    const days = numberVar(env, name, fallback);
    if (days <= 0) fail(name, String(env[name]), 'a number of days above 0');
    return days;
  };
  const retentionDays = positiveDays('HOOKPOST_RETENTION_DAYS', 30);
  const batch = numberVar(env, 'HOOKPOST_RETENTION_BATCH_SIZE', 500, { min: 1, integer: true });
  if (batch > 10_000)
    fail(
      'HOOKPOST_RETENTION_BATCH_SIZE',
      String(env.HOOKPOST_RETENTION_BATCH_SIZE),
      'an integer from 1 to 10000',
    );
  return {
    retentionDays,
    payloadRetentionDays: positiveDays('HOOKPOST_PAYLOAD_RETENTION_DAYS', retentionDays),
    partitionIntervalSeconds: numberVar(env, 'HOOKPOST_PARTITION_INTERVAL_SECONDS', 86400, {
      min: 1,
      integer: true,
    }),
    partitionsAhead: numberVar(env, 'HOOKPOST_PARTITIONS_AHEAD', 3, { min: 1, integer: true }),
    retentionIntervalSeconds: numberVar(env, 'HOOKPOST_RETENTION_INTERVAL_SECONDS', 300, { min: 0.05 }),
    retentionBatchSize: batch,
    retentionPauseMs: numberVar(env, 'HOOKPOST_RETENTION_PAUSE_MS', 20),
  };
}
