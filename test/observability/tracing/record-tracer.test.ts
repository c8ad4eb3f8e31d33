import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LINEAGE } from '../../../src/core/headers.ts';
import type { IncomingRecord, RecordHeader } from '../../../src/core/records.ts';
import type { EffectContext } from '../../../src/dsl/types.ts';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import type { RecordTracer } from '../../../src/observability/tracing/port.ts';
import { OtelRecordTracer, recordKeyOf, SPAN } from '../../../src/observability/tracing/record-tracer.ts';
import { TRACEPARENT } from '../../../src/observability/tracing/trace-headers.ts';
import { kafkaClients } from '../../../src/runtime/base/client-supplier.ts';
import { parseWorkerConfig } from '../../../src/runtime/base/config.ts';
import { noFaults } from '../../../src/runtime/base/faults.ts';
import type { WorkerStats } from '../../../src/runtime/base/worker-events.ts';
import type { WorkerServices } from '../../../src/runtime/base/worker-services.ts';
import { createTask } from '../../../src/runtime/task/task.ts';
import type { TransactionalOutput } from '../../../src/runtime/transaction/output.ts';
import { WorkerRecordCollector } from '../../../src/runtime/transaction/record-collector.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';

const UPSTREAM = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** in → effect → map → out, and by value to a repartition topic: an output, a repartition record and, for bad JSON, a dead letter. */
function app(calls: EffectContext<unknown>[]) {
  const builder = new TopologyBuilder({ appId: 'traced' });
  const values = { key: stringSerde, value: jsonSerde<number>() };
  const input = builder.stream('in', values).effect('notify', async (_key, _value, ctx) => void calls.push(ctx));
  input.mapValues((v) => v * 10, { value: jsonSerde<number>() }).to('out', values);
  input.groupBy((_k, v) => String(v), { key: stringSerde }).count({ name: 'per-value' }).toStream().to('counts', { key: stringSerde, value: jsonSerde<number>() });
  return compile(builder);
}

interface Produced {
  readonly topic: string;
  readonly headers: Record<string, string>;
}

function harness(tracer: RecordTracer | null) {
  const produced: Produced[] = [];
  const toObject = (headers: Record<string, Buffer | string>[] | readonly RecordHeader[] | undefined): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const h of headers ?? []) {
      if ('key' in h && 'value' in h && Buffer.isBuffer(h.value)) out[h.key as string] = h.value.toString();
      else for (const [k, v] of Object.entries(h)) out[k] = v.toString();
    }
    return out;
  };
  const output = {
    produceOutput: (topic: string, _p: number | null, _v: Buffer | null, _k: Buffer | null, _t: number, headers: Record<string, Buffer | string>[]) => produced.push({ topic, headers: toObject(headers) }),
    produce: () => undefined,
    produceBatched: (topic: string, _p: number, record: { headers?: readonly RecordHeader[]; lineage?: string }) => produced.push({ topic, headers: { ...toObject(record.headers), [LINEAGE.header]: record.lineage ?? '' } }),
  } as unknown as TransactionalOutput;
  const config = { ...parseWorkerConfig({ bootstrap: 'fake:1', appId: 'traced', instanceId: 'i' }), instanceId: 'i' };
  const services: WorkerServices = { config, transactionalId: 'traced-i', stats: { deadLettered: 0, recordsProduced: 0 } as WorkerStats, clients: kafkaClients, faults: noFaults, emit: () => undefined, clientConfig: () => ({}), consumer: () => undefined, step: () => undefined, tracer };
  const calls: EffectContext<unknown>[] = [];
  const plan = app(calls);
  const repartition = new Set(plan.topics.filter((t) => t.kind === 'repartition').map((t) => t.name));
  const collector = new WorkerRecordCollector(services, output, new Set([plan.deadLetterTopic]), repartition, () => 1);
  const task = createTask(plan, 0, 0, { tracer });
  const process = async (offset: number, value: string, headers: RecordHeader[] = []): Promise<void> => {
    const record: IncomingRecord = { topic: 'in', partition: 0, offset, key: Buffer.from(`k${offset}`), value: Buffer.from(value), timestamp: offset, headers };
    await task.process(record, collector.sinkFor(record));
  };
  return { produced, calls, process, deadLetterTopic: plan.deadLetterTopic };
}

function recordingTracer(): { tracer: OtelRecordTracer; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: new OtelRecordTracer(provider.getTracer('test'), () => provider.shutdown()), spans: () => exporter.getFinishedSpans() };
}

const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

test('with tracing off no span is started and no traceparent header is written: the effect sees none either', async () => {
  const { produced, calls, process, deadLetterTopic } = harness(null);
  await process(0, '1');
  await process(1, '{not json');
  assert.deepEqual(produced.map((p) => p.topic).sort(), [deadLetterTopic, 'out', produced.find((p) => p.topic.includes('repartition'))?.topic].sort());
  for (const p of produced) assert.equal(p.headers[TRACEPARENT], undefined, `${p.topic} carries no traceparent`);
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.traceparent, undefined);
});

test('with tracing on each record gets one span, a child of the traceparent it arrived with, named on every output and the repartition record', async () => {
  const { tracer, spans } = recordingTracer();
  const { produced, process } = harness(tracer);
  await process(0, '7', [{ key: TRACEPARENT, value: Buffer.from(UPSTREAM) }]);
  await process(1, '8');
  const commit = tracer.commitStarted(2);
  commit.end('committed');
  const records = spans().filter((s) => s.name === 'process in');
  assert.equal(records.length, 2, 'one span per input record');
  const [first, second] = records.sort((a, b) => Number(a.attributes['messaging.kafka.offset']) - Number(b.attributes['messaging.kafka.offset']));
  assert.equal(first!.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c', 'the upstream trace goes on');
  assert.equal(parentOf(first!), 'b7ad6b7169203331');
  assert.equal(parentOf(second!), undefined, 'a record without traceparent starts a trace');
  const ofFirst = produced.filter((p) => p.headers[LINEAGE.header]?.startsWith('in/0/0#'));
  assert.equal(ofFirst.length, 2, 'the output and the repartition record');
  for (const p of ofFirst) assert.equal(p.headers[TRACEPARENT], `00-${first!.spanContext().traceId}-${first!.spanContext().spanId}-01`, `${p.topic} names the record's span`);
  assert.deepEqual(first!.events.map((e) => e.name), ['send', 'send']);
  assert.equal(first!.attributes[SPAN.outcome], 'committed');
  const commitSpan = spans().find((s) => s.name === SPAN.commit)!;
  assert.equal(commitSpan.attributes[SPAN.outcome], 'committed');
  assert.deepEqual(commitSpan.links.map((l) => l.context.spanId).sort(), records.map((s) => s.spanContext().spanId).sort(), 'the commit links the records it committed');
});

test('a dead letter gets a span of its own under its record\'s, and its traceparent names it', async () => {
  const { tracer, spans } = recordingTracer();
  const { produced, process, deadLetterTopic } = harness(tracer);
  await process(5, '{not json');
  tracer.rolledBack();
  const dead = spans().find((s) => s.name === `dead-letter ${deadLetterTopic}`);
  assert.ok(dead, 'a dead-letter span');
  assert.equal(dead.attributes['onceflow.error.code'], 'JSON_INVALID');
  assert.equal(dead.attributes[SPAN.transactional], true);
  const record = spans().find((s) => s.name === 'process in')!;
  assert.equal(parentOf(dead), record.spanContext().spanId);
  assert.equal(record.attributes[SPAN.outcome], 'aborted', 'a rolled-back transaction ends its record spans as aborted');
  const letter = produced.find((p) => p.topic === deadLetterTopic)!;
  assert.equal(letter.headers[TRACEPARENT], `00-${dead.spanContext().traceId}-${dead.spanContext().spanId}-01`);
});

test('an effect stage\'s call has a span marked outside the transaction, under the record\'s span, and its traceparent reaches the effect', async () => {
  const { tracer, spans } = recordingTracer();
  const { calls, process } = harness(tracer);
  await process(3, '4');
  tracer.commitStarted(1).end('committed');
  const effect = spans().find((s) => s.name === 'effect notify');
  assert.ok(effect, 'an effect span');
  assert.equal(effect.attributes[SPAN.transactional], false);
  assert.equal(effect.kind, 2 /* SpanKind.CLIENT */);
  const record = spans().find((s) => s.name === 'process in')!;
  assert.equal(parentOf(effect), record.spanContext().spanId);
  assert.equal(calls[0]!.traceparent, `00-${effect.spanContext().traceId}-${effect.spanContext().spanId}-01`);
});

test('a fenced commit says so on the commit span, with an error status', () => {
  const { tracer, spans } = recordingTracer();
  tracer.commitStarted(0).end('fenced');
  const commit = spans().find((s) => s.name === SPAN.commit)!;
  assert.equal(commit.attributes[SPAN.outcome], 'fenced');
  assert.equal(commit.status.code, 2 /* SpanStatusCode.ERROR */);
});

test('an output\'s lineage leads back to its record: the key of a source record and of a repartitioned one', () => {
  assert.equal(recordKeyOf('orders.v1/0/5#0'), 'orders.v1/0/5#');
  assert.equal(recordKeyOf('orders.v1/0/5#c1'), 'orders.v1/0/5#');
  assert.equal(recordKeyOf('orders/0/5#0.3'), 'orders/0/5#0.');
});
