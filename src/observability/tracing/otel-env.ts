// The standard OpenTelemetry variables, read as onceflow's `tracing` config section, so a worker
// deployed beside other OpenTelemetry services is configured the way they are.

/**
 * The `tracing` section the OTEL_* variables in `env` ask for, unvalidated (the worker config schema
 * names a bad value by its field), or undefined when they leave tracing off: it is on only where
 * OTEL_TRACES_EXPORTER is set, since onceflow loads the SDK for nothing else.
 */
export function tracingFromOtelEnv(env: Readonly<Record<string, string | undefined>>): Record<string, unknown> | undefined {
  const set = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const exporter = set('OTEL_TRACES_EXPORTER');
  if (exporter === undefined || set('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const section: Record<string, unknown> = { exporter };
  const endpoint = set('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint !== undefined) section.endpoint = endpoint;
  const protocol = set('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? set('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined) section.protocol = protocol;
  const sampler = set('OTEL_TRACES_SAMPLER');
  if (sampler !== undefined) section.sampler = sampler;
  const ratio = set('OTEL_TRACES_SAMPLER_ARG');
  // Not a number: passed on as text, so the schema refuses it by name instead of it reading as NaN.
  if (ratio !== undefined) section.samplerArg = Number.isFinite(Number(ratio)) ? Number(ratio) : ratio;
  const serviceName = set('OTEL_SERVICE_NAME');
  if (serviceName !== undefined) section.serviceName = serviceName;
  return section;
}
