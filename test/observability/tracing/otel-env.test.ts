import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadWorkerConfig } from '../../../src/cli/config-sources.ts';
import { tracingFromOtelEnv } from '../../../src/observability/tracing/otel-env.ts';
import { ConfigError } from '../../../src/runtime/base/config.ts';

const base = { ONCEFLOW_BOOTSTRAP: 'localhost:9092', ONCEFLOW_APP_ID: 'app' };

test('without OTEL_TRACES_EXPORTER tracing stays off, whatever else is set', () => {
  assert.equal(tracingFromOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), undefined);
  assert.equal(tracingFromOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), undefined);
  assert.equal(loadWorkerConfig({ env: base }).tracing, undefined);
});

test('the standard OTEL_* variables become the validated tracing section', () => {
  const config = loadWorkerConfig({
    env: { ...base, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01', OTEL_SERVICE_NAME: 'orders-eu' },
  });
  assert.deepEqual(config.tracing, { exporter: 'otlp', endpoint: 'http://collector:4318', protocol: 'http/json', sampler: 'parentbased_traceidratio', samplerArg: 0.01, serviceName: 'orders-eu' });
});

test('a bad OTEL_* value is refused at the edge, named by its field', () => {
  const refused = (env: Record<string, string>, field: string): void => {
    assert.throws(
      () => loadWorkerConfig({ env: { ...base, OTEL_TRACES_EXPORTER: 'otlp', ...env } }),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => i.field === field),
    );
  };
  refused({ OTEL_TRACES_SAMPLER_ARG: 'half' }, 'tracing.samplerArg');
  refused({ OTEL_TRACES_SAMPLER_ARG: '2' }, 'tracing.samplerArg');
  refused({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'tracing.sampler');
  refused({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'tracing.protocol');
  refused({ OTEL_TRACES_EXPORTER: 'zipkin' }, 'tracing.exporter');
});
