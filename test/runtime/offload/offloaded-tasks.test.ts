import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LINEAGE } from '../../../src/core/headers.ts';
import type { IncomingRecord, OutgoingRecord } from '../../../src/core/records.ts';
import { RecordSizeLimits } from '../../../src/core/record-size.ts';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import { OffloadedTasks, offloadableSubtopologies } from '../../../src/runtime/offload/offloaded-tasks.ts';
import type { FromThread } from '../../../src/runtime/offload/processing-thread.ts';
import { ThreadRequests } from '../../../src/runtime/offload/thread-requests.ts';
import { forEachOutput, packRun } from '../../../src/runtime/offload/record-transfer.ts';
import { createTask } from '../../../src/runtime/task/task.ts';
import { Worker } from '../../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import { jsonSerde, registryAvroSerde, stringSerde } from '../../../src/serdes/index.ts';
import { FakeCluster } from '../fake-kafka.ts';
import { FakeRegistry } from '../../support/fake-registry.ts';
import { InProcessThread } from './in-process-thread.ts';
import { parseAvroSchema } from '../../../src/serdes/avro-types.ts';

const strings = { key: stringSerde, value: stringSerde };
/**
 * filter → mapValues (dead-letters `bad`) → out; with `counting`, a second, stateful sub-topology the thread must not take.
 * `asOnThread`: the thread's own copy, whose filter fails on `odd` (it returns a promise, which a filter
 * may not), as a stage may fail on one thread and not on the other.
 */
function app(counting = false, asOnThread = false) {
  const builder = new TopologyBuilder({ appId: 'app' });
  builder
    .stream('in', strings)
    .filter((_k, v) => (v === 'odd' && asOnThread ? (Promise.resolve(true) as unknown as boolean) : v !== 'skip'))
    .mapValues((v) => {
      if (v === 'bad') throw new Error('bad value');
      return v!.toUpperCase();
    }, { value: stringSerde })
    .to('out', strings);
  if (counting) builder.stream('counted', strings).groupByKey().count({ name: 'count' }).toStream().to('counts', { key: stringSerde, value: jsonSerde<number>() });
  return compile(builder);
}

function record(offset: number, value: string): IncomingRecord {
  return { topic: 'in', partition: 0, offset, key: Buffer.from(`k${offset}`), value: Buffer.from(value), timestamp: 100 + offset, headers: [] };
}

function describe(outputs: [OutgoingRecord, number][]): string[] {
  return outputs.map(([o, input]) => `${input}:${o.topic}:${o.key?.toString()}=${o.topic === 'out' ? o.value?.toString() : '(dead letter)'}`);
}

test('only sub-topologies without stores or effects run on the processing thread', () => {
  assert.deepEqual(offloadableSubtopologies(app(true)), [0]);
});

test('the thread computes what the main thread would: outputs and dead letters in order, each with its input record', async () => {
  const plan = app();
  const values = ['a', 'skip', 'bad', 'b'];
  const records = values.map((v, i) => record(i, v));
  const result = await new OffloadedTasks(plan, new RecordSizeLimits()).process(0, packRun('in', 0, records), Number.NEGATIVE_INFINITY);
  const onThread: [OutgoingRecord, number][] = [];
  forEachOutput(result.outputs, (o, input) => onThread.push([o, input]));

  const direct: [OutgoingRecord, number][] = [];
  const task = createTask(plan, 0, 0);
  for (const [i, r] of records.entries()) await task.process(r, { send: (o) => void direct.push([o, i]) });
  assert.equal(result.processed, 4);
  assert.deepEqual(describe(onThread), ['0:out:k0=A', '2:app-dlq:k2=(dead letter)', '3:out:k3=B']);
  assert.deepEqual(describe(onThread), describe(direct));
  assert.equal(result.streamTime, 103);
});

test('a record whose stage throws (not dead-lettered) stops the run there: nothing of it is returned, the main thread takes over from it', async () => {
  const records = ['a', 'odd', 'b'].map((v, i) => record(i, v));
  const result = await new OffloadedTasks(app(false, true), new RecordSizeLimits()).process(0, packRun('in', 0, records), Number.NEGATIVE_INFINITY);
  const outputs: [OutgoingRecord, number][] = [];
  forEachOutput(result.outputs, (o, input) => outputs.push([o, input]));
  assert.equal(result.processed, 1);
  assert.deepEqual(describe(outputs), ['0:out:k0=A']);
});

async function runWorker(thread: InProcessThread | undefined, values: readonly string[]) {
  const cluster = new FakeCluster({ in: 1, out: 1, 'app-dlq': 1 });
  const worker = new Worker(
    app(),
    { bootstrap: 'fake:9092', appId: 'app', instanceId: 'i1', stateDir: mkdtempSync(join(tmpdir(), 'onceflow-offload-')), consumeBatchSize: 3, commitIntervalMs: 50, maxRecordsPerTransaction: 4 },
    { clients: cluster.supplier(), ...(thread ? { processingThread: { spawn: () => thread, file: 'in-process' } } : {}) },
  );
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  await worker.start();
  cluster.consumers[0]!.rebalance('assign', [{ topic: 'in', partition: 0 }]);
  cluster.append('in', 0, values);
  const deadline = Date.now() + 5_000;
  while (cluster.committed.get('in-0') !== values.length) {
    if (Date.now() > deadline) throw new Error(`not everything committed: ${JSON.stringify(events)}`);
    await sleep(5);
  }
  await worker.stop();
  const outputs = cluster.outputs.map((o) => `${o.topic} ${o.key}=${o.topic === 'out' ? o.value : '(dead letter)'} ${o.headers[LINEAGE.header]}`);
  return { outputs, events, worker };
}

const INPUT = ['a', 'skip', 'bad', 'b', 'odd', 'c', 'd', 'skip', 'e', 'f'];

test('a worker with the processing thread commits the same outputs, with the same lineage, as without it, a record the thread failed on processed by the main thread', async () => {
  const thread = new InProcessThread(async () => app(false, true));
  const withThread = await runWorker(thread, INPUT);
  const without = await runWorker(undefined, INPUT);
  assert.deepEqual(withThread.outputs, without.outputs);
  assert.equal(withThread.outputs.filter((o) => o.startsWith('out ')).length, 7, withThread.outputs.join('\n'));
  assert.ok(thread.requests.length >= 2, `the thread processed the batches (${thread.requests.length} requests)`);
  assert.ok(thread.shortRuns >= 1, 'the thread failed on `odd` and left it to the main thread');
  assert.deepEqual(withThread.events.find((e) => e.type === 'processing-thread'), { type: 'processing-thread', subtopologies: [0], hosted: [], threads: 1 });
});

test('a processing thread that dies leaves its records to the main thread: nothing lost, nothing twice', async () => {
  const thread = new InProcessThread(async () => app(false, true), 2);
  const run = await runWorker(thread, INPUT);
  const without = await runWorker(undefined, INPUT);
  assert.deepEqual(run.outputs, without.outputs);
  const off = run.events.filter((e) => e.type === 'processing-thread');
  assert.equal(off.length, 2);
  assert.match(String((off[1] as { off?: string }).off), /exited \(1\)/);
  assert.equal((off[1] as { failed?: boolean }).failed, true);
});

const ORDER_V1 = { type: 'record', name: 'Order', namespace: 't', fields: [{ name: 'orderId', type: 'string' }, { name: 'amount', type: 'long' }] };
// v2 adds a field with a default: v1 records are read as v2 through v1's writer schema, which is fetched from the registry.
const ORDER_V2 = { ...ORDER_V1, fields: [...ORDER_V1.fields, { name: 'status', type: 'string', default: 'NEW' }] };
const SHIPPED = { type: 'record', name: 'Shipped', namespace: 't', fields: [{ name: 'orderId', type: 'string' }, { name: 'status', type: 'string' }] };

/** filter → mapValues over registry Avro in and out, each copy with its own serdes (as the main thread and the thread have). */
function avroApp(registry: FakeRegistry) {
  const builder = new TopologyBuilder({ appId: 'avro' });
  builder
    .stream('orders-in', { key: stringSerde, value: registryAvroSerde<{ orderId: string; amount: number; status: string }>({ schema: ORDER_V2, client: registry }) })
    .filter((_k, order) => order!.amount > 10)
    .mapValues((order) => ({ orderId: order!.orderId.toUpperCase(), status: order!.status }), { value: registryAvroSerde<{ orderId: string; status: string }>({ schema: SHIPPED, client: registry }) })
    .to('orders-out', { key: stringSerde, value: registryAvroSerde<{ orderId: string; status: string }>({ schema: SHIPPED, client: registry }) });
  return compile(builder);
}

test('registry Avro serdes go to the thread with their stages: prepared there, an unseen writer schema fetched there, the same bytes out', async () => {
  const registry = new FakeRegistry();
  const main = avroApp(registry);
  assert.deepEqual(offloadableSubtopologies(main), [0]);
  for (const { serde, ctx } of main.serdeUsages()) await serde.prepare?.(ctx, { registryUrl: registry.url });
  const v1 = registryAvroSerde<{ orderId: string; amount: number }>({ schema: ORDER_V1, client: registry });
  const inValue = { topic: 'orders-in', role: 'value' } as const;
  await v1.prepare!(inValue, { registryUrl: registry.url });
  const records: IncomingRecord[] = (
    [['a', 5], ['b', 50], ['c', 500]] as const
  ).map(([orderId, amount], i) => ({ topic: 'orders-in', partition: 0, offset: i, key: Buffer.from(`k${i}`), value: v1.serialize({ orderId, amount }, inValue), timestamp: 100 + i, headers: [] }));

  const replies: FromThread[] = [];
  const requests = new ThreadRequests(async () => avroApp(registry), (m) => void replies.push(m));
  await requests.receive({ type: 'init', file: 'avro.ts', registryUrl: registry.url, messageMaxBytes: 1_000_000, topicMaxMessageBytes: {} });
  assert.deepEqual(replies[0], { type: 'ready', offloadable: [0], hostable: [], sourceTopics: [['orders-in']] });
  await requests.receive({ type: 'process', id: 1, runs: [{ subtopology: 0, run: packRun('orders-in', 0, records), streamTime: Number.NEGATIVE_INFINITY }] });
  const processed = replies[1];
  assert.ok(processed?.type === 'processed', JSON.stringify(processed));
  assert.equal(processed.results[0]!.processed, 3);
  const onThread: string[] = [];
  forEachOutput(processed.results[0]!.outputs, (o, input) => onThread.push(`${input}:${o.topic}:${o.key?.toString()}=${o.value?.toString('hex')}`));

  const direct: string[] = [];
  const task = createTask(main, 0, 0);
  for (const [i, r] of records.entries()) await task.process(r, { send: (o) => void direct.push(`${i}:${o.topic}:${o.key?.toString()}=${o.value?.toString('hex')}`) });
  assert.equal(onThread.length, 2);
  assert.deepEqual(onThread, direct);
});

test('a serde the thread cannot prepare fails its start (the worker then goes on without it), the answer naming the serde and its topic', async () => {
  const registry = new FakeRegistry();
  registry.incompatible.add(JSON.stringify(parseAvroSchema(SHIPPED).schema({ exportAttrs: true })));
  const replies: FromThread[] = [];
  const requests = new ThreadRequests(async () => avroApp(registry), (m) => void replies.push(m));
  await requests.receive({ type: 'init', file: 'avro.ts', registryUrl: registry.url, messageMaxBytes: 1_000_000, topicMaxMessageBytes: {} });
  assert.equal(replies.length, 1);
  assert.ok(replies[0]?.type === 'failed', JSON.stringify(replies[0]));
  assert.match(replies[0].message, /^preparing the value serde registry-avro:t\.Shipped of orders-out: schema is not compatible/);
});
