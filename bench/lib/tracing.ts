// `--tracing`: onceflow EOS with tracing off, on at 1% and on at 100% sampling, its spans exported
// over OTLP/HTTP to a receiver in the bench's own process that answers and drops them, so the
// figures hold what tracing costs the worker (spans, headers, the exporter's requests) and nothing
// of a collector's.
import { OtlpReceiver } from '../../src/testing/otlp-receiver.ts';
import type { ContenderName } from './contenders.ts';

export const TRACING_CONTENDERS: readonly ContenderName[] = ['onceflow-eos', 'onceflow-eos-trace1pct', 'onceflow-eos-trace100pct'];
/** The pipelines `--tracing` runs by default: one stateless, one with two repartitions and stores. */
export const TRACING_PIPELINES = ['filter-map', 'orders'] as const;

let receiver: OtlpReceiver | undefined;

/** Starts the receiver the tracing contenders export to; it lives as long as the bench (it does not keep the process alive). */
export async function startTraceReceiver(): Promise<void> {
  receiver ??= await OtlpReceiver.start({ keepSpans: false });
}

/** The standard OTEL_* variables that turn a contender's tracing on at `ratio`. */
export function tracingEnv(ratio: number): Record<string, string> {
  if (receiver === undefined) throw new Error('a tracing contender needs --tracing (it starts the bench\'s OTLP receiver)');
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: String(ratio),
  };
}
