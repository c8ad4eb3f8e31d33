// Loads the OpenTelemetry SDK, which is an optional dependency, only for a worker that traces: a worker
// that does not never imports it.
import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../../runtime/base/config.ts';
import { TracingSdkMissingError } from './errors.ts';
import type { RecordTracer } from './port.ts';

/** Who the spans come from: the `service.*` resource attributes. */
export interface TracedService {
  readonly name: string;
  readonly instanceId: string;
}

const SDK_PACKAGES = '@opentelemetry/sdk-trace-base @opentelemetry/core @opentelemetry/resources @opentelemetry/exporter-trace-otlp-http';

/** The worker's tracer for `config`, or null when it exports nowhere (`exporter: none`). */
export async function startTracing(config: TracingConfig, service: TracedService): Promise<RecordTracer | null> {
  if (config.exporter === 'none') return null;
  const [sdk, { resourceFromAttributes }, { OtelRecordTracer }] = await Promise.all([
    importSdk(() => import('@opentelemetry/sdk-trace-base')),
    importSdk(() => import('@opentelemetry/resources')),
    // It imports @opentelemetry/core (the W3C propagator), optional like the SDK.
    importSdk(() => import('./record-tracer.ts')),
  ]);
  const spanExporter = (config.exporter === 'console' ? new sdk.ConsoleSpanExporter() : await otlpExporter(config.endpoint));
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerArg);
  const samplers: Record<TracingConfig['sampler'], Sampler> = {
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio }),
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    traceidratio: ratio,
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
  };
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName ?? service.name, 'service.instance.id': service.instanceId }),
    sampler: samplers[config.sampler],
    spanProcessors: [new sdk.BatchSpanProcessor(spanExporter)],
  });
  return new OtelRecordTracer(provider.getTracer('onceflow'), () => provider.shutdown());
}

async function otlpExporter(endpoint: string): Promise<SpanExporter> {
  const { OTLPTraceExporter } = await importSdk(() => import('@opentelemetry/exporter-trace-otlp-http'));
  return new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
}

async function importSdk<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new TracingSdkMissingError(`tracing is on, but the OpenTelemetry SDK is not installed (${(e as Error).message}): npm install ${SDK_PACKAGES}`, { cause: e });
  }
}
