import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LINEAGE, parseLineage } from '../../src/core/headers.ts';
import type { IncomingRecord } from '../../src/core/records.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { parseWorkerConfig } from '../../src/runtime/base/config.ts';
import { kafkaClients } from '../../src/runtime/base/client-supplier.ts';
import { noFaults } from '../../src/runtime/base/faults.ts';
import { WorkerRecordCollector } from '../../src/runtime/transaction/record-collector.ts';
import type { WorkerServices } from '../../src/runtime/base/worker-services.ts';
import { createTask } from '../../src/runtime/task/task.ts';
import type { TransactionalOutput } from '../../src/runtime/transaction/output.ts';
import type { WorkerStats } from '../../src/runtime/base/worker-events.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';

// The lineage headers are what the exactly-once verifier counts records by: a record's own outputs
// are numbered 0, 1, ...; results a record cache releases later on its behalf c0, c1, ... across
// every cache that holds one for it. These numbers must not change when the runtime does.

function app() {
  const builder = new TopologyBuilder({ appId: 'lineage' });
  const values = { key: stringSerde, value: jsonSerde<number>() };
  const input = builder.stream('in', values);
  input.mapValues((v) => v * 10, { name: 'times-ten', value: jsonSerde<number>() }).to('direct', values);
  input.groupByKey().aggregate(() => 0, (_k, v, total) => total + v, { state: jsonSerde<number>(), name: 'sum' }).toStream().to('sums', values);
  input.groupByKey().aggregate(() => 0, (_k, _v, n) => n + 1, { state: jsonSerde<number>(), name: 'count' }).toStream().to('counts', values);
  return builder;
}

function harness() {
  const produced: string[] = [];
  const produce = (topic: string, _partition: number | null, value: Buffer | null, key: Buffer | null, _timestamp: number, headers?: Record<string, Buffer | string>[]) => {
    const h = Object.assign({}, ...(headers ?? [])) as Record<string, Buffer | string>;
    const header = h[LINEAGE.header];
    const lineage = header === undefined ? undefined : parseLineage(header.toString());
    produced.push(`${topic} ${key?.toString()}=${value?.toString()} from ${lineage?.source.split('/')[2] ?? '-'}#${lineage?.seq ?? '-'}`);
  };
  // Outputs and changelog records alike: the golden list holds both, in the order they were produced.
  const output = { produce, produceOutput: produce } as unknown as TransactionalOutput;
  const config = { ...parseWorkerConfig({ bootstrap: 'fake:1', appId: 'lineage', instanceId: 'i' }), instanceId: 'i' };
  const stats = {} as WorkerStats;
  const context: WorkerServices = { config, transactionalId: 'lineage-i', stats, clients: kafkaClients, faults: noFaults, emit: () => undefined, clientConfig: () => ({}), consumer: () => undefined, step: () => undefined, tracer: null };
  return { produced, collector: new WorkerRecordCollector(context, output, new Set(), new Set(), () => 1) };
}

test('lineage numbers of direct outputs and of cached results released on overflow and at the commit', async () => {
  const { produced, collector } = harness();
  const task = createTask(compile(app()), 0, 0, { cache: { maxRecords: 2 } });
  const keys = ['a', 'b', 'a', 'c', 'b', 'd', 'a'];
  for (const [offset, key] of keys.entries()) {
    const record: IncomingRecord = { topic: 'in', partition: 0, offset, key: Buffer.from(key), value: Buffer.from(String(offset + 1)), timestamp: offset, headers: [] };
    await task.process(record, collector.sinkFor(record));
  }
  await task.prepareCommit(collector.commitCollector);
  assert.deepEqual(produced, GOLDEN);
});

/** What the worker produced before the record path became one-way (commit cd76532). */
const GOLDEN: string[] = [
  'direct a=10 from 0#0',
  'direct b=20 from 1#0',
  'direct a=30 from 2#0',
  'direct c=40 from 3#0',
  'sums b=2 from 1#c0',
  'counts b=1 from 1#c1',
  'direct b=50 from 4#0',
  'sums a=4 from 2#c0',
  'counts a=2 from 2#c1',
  'direct d=60 from 5#0',
  'sums c=4 from 3#c0',
  'counts c=1 from 3#c1',
  'direct a=70 from 6#0',
  'sums b=7 from 4#c0',
  'counts b=2 from 4#c1',
  'sums d=6 from 5#c0',
  'sums a=11 from 6#c0',
  'counts d=1 from 5#c1',
  'counts a=3 from 6#c1',
  'lineage-sum-changelog a=11 from -#-',
  'lineage-sum-changelog b=7 from -#-',
  'lineage-sum-changelog c=4 from -#-',
  'lineage-sum-changelog d=6 from -#-',
  'lineage-count-changelog a=3 from -#-',
  'lineage-count-changelog b=2 from -#-',
  'lineage-count-changelog c=1 from -#-',
  'lineage-count-changelog d=1 from -#-',
];
