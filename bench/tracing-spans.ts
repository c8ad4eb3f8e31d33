/**
 * `node --import tsx bench/tracing-spans.ts [--records N]`: what the stages of a record would cost as
 * span events or as child spans of the record's span, at 100% sampling, with the SDK's batch
 * processor and an exporter that drops what it gets (the worker's setup, minus the network). Decided
 * docs/operations.md's choice: a record's outputs are events of its span, not spans.
 */
import { parseArgs } from 'node:util';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

const { values } = parseArgs({ options: { records: { type: 'string', default: '200000' }, stages: { type: 'string', default: '3' } } });
const records = Number(values.records);
const stages = Number(values.stages);

const dropping: SpanExporter = { export: (_spans: ReadableSpan[], done) => done({ code: 0 }), shutdown: async () => undefined };
const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping, { maxQueueSize: 1 << 16 })] });
const tracer = provider.getTracer('bench');

function run(kind: 'span only' | 'events' | 'child spans'): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < records; i++) {
    const span = tracer.startSpan('process orders', { attributes: { 'messaging.kafka.offset': i } });
    for (let s = 0; s < stages; s++) {
      if (kind === 'events') span.addEvent('send', { 'messaging.destination.name': 'out' });
      else if (kind === 'child spans') tracer.startSpan(`stage ${s}`, undefined, trace.setSpan(ROOT_CONTEXT, span)).end();
    }
    span.end();
  }
  return Number(process.hrtime.bigint() - started) / 1000 / records;
}

// Each once to warm up, then measured in turn.
for (const kind of ['span only', 'events', 'child spans'] as const) run(kind);
const rows = (['span only', 'events', 'child spans'] as const).map((kind) => ({ kind, usPerRecord: run(kind) }));
await provider.shutdown();
console.log(JSON.stringify({ date: new Date().toISOString(), node: process.version, records, stagesPerRecord: stages, rows }, null, 2));
