import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { tumblingWindow } from '../../src/dsl/windows.ts';
import type { Windowed } from '../../src/dsl/types.ts';
import { compile } from '../../src/graph/compile.ts';
import { internalTopicConfig } from '../../src/graph/internal-topic-configs.ts';
import { describeJson, describeMermaid, describeText } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

interface Reading { readonly sensor: string; readonly celsius: number }

function readingsApp(partitions?: number) {
  const app = new TopologyBuilder({ appId: 'plant' });
  const readings = app
    .stream('readings', { key: stringSerde, value: jsonSerde<Reading>() })
    .selectKey((_gateway, reading) => reading.sensor, { key: stringSerde })
    .repartition({ name: 'by-sensor', ...(partitions !== undefined ? { partitions } : {}) });
  return { app, readings };
}

test('repartition sends the records through <appId>-<name>-repartition and continues in a new sub-topology', () => {
  const { app, readings } = readingsApp(6);
  readings.to('readings-by-sensor');
  const compiled = compile(app);
  assert.equal(compiled.subtopologies.length, 2);
  assert.deepEqual(compiled.subtopologies[1]!.sourceTopics, ['plant-by-sensor-repartition']);
  assert.deepEqual(compiled.subtopologies[1]!.nodes.map((n) => `${n.name}:${n.kind}`), ['by-sensor-repartition-source:repartitionSource', 'by-sensor:repartition', 'KSTREAM-SINK-0000000003:sink']);
  // configured for event time like every repartition topic, with the partition count it was given
  const topic = compiled.topics.find((t) => t.name === 'plant-by-sensor-repartition')!;
  assert.deepEqual(topic.config, internalTopicConfig('repartition'));
  assert.equal(topic.partitions, 6);
  const plan = compiled.resolvePartitions({ readings: 2 });
  assert.equal(plan.topics.find((t) => t.name === 'plant-by-sensor-repartition')!.partitions, 6);
  assert.equal(plan.tasksPerSubtopology.get(1), 6);
  assert.match(describeText(compiled), /Processor: by-sensor \(repartition, stores: \[\]\)/);
  assert.match(describeText(compiled), /plant-by-sensor-repartition \(repartition, internal, cleanup.policy=delete, retention.ms=-1, .*partitions=6\)/);
  assert.match(describeMermaid(compiled), /by-sensor<br\/>repartition/);
  // the console shows the topic between the two sub-topologies
  const graph = topologyGraph(describeJson(compiled));
  assert.ok(graph.edges.some((e) => e.from === 'stage:by-sensor-repartition-sink' && e.to === 'topic:plant-by-sensor-repartition'));
  assert.ok(graph.edges.some((e) => e.from === 'topic:plant-by-sensor-repartition' && e.to === 'stage:by-sensor-repartition-source'));
  assert.equal(graph.nodes.find((n) => n.id === 'stage:by-sensor')!.subtopology, 1);
});

test('without partitions the topic takes the task count of its writer, as a groupBy repartition topic does', () => {
  const { app, readings } = readingsApp();
  readings.to('readings-by-sensor');
  const plan = compile(app).resolvePartitions({ readings: 3 });
  assert.equal(plan.topics.find((t) => t.name === 'plant-by-sensor-repartition')!.partitions, 3);
});

test('records keep key, value and timestamp through the topic, out-of-order ones too; a windowed count after it has stream time of its own', () => {
  const { app, readings } = readingsApp();
  readings.to('readings-by-sensor', { value: jsonSerde<Reading>() });
  readings.groupByKey().windowedBy(tumblingWindow(100, { graceMs: 10 })).count({ name: 'readings-per-window' }).toStream().to('counts');
  const driver = new TopologyTestDriver(app, { partitions: 2 });
  const input = driver.input<string, Reading>('readings');
  input.pipe('gw1', { sensor: 's1', celsius: 20 }, { timestamp: 150 });
  input.pipe('gw2', { sensor: 's1', celsius: 21 }, { timestamp: 105 }); // out of order, within grace: counted
  input.pipe('gw1', { sensor: 's2', celsius: 22 }, { timestamp: 230 }); // [100,200) closes at 210
  input.pipe('gw2', { sensor: 's1', celsius: 23 }, { timestamp: 120 }); // late for the count; passed on as it is by the repartition
  const out = driver.output<string, Reading>('readings-by-sensor').readRecords();
  assert.deepEqual(out.map((r) => [r.key, r.value.celsius, r.timestamp]), [['s1', 20, 150], ['s1', 21, 105], ['s2', 22, 230], ['s1', 23, 120]]);
  // the topic is partitioned by the new key: both of s1's records in one partition
  const byKey = new Map<string, Set<number>>();
  for (const r of driver.records('plant-by-sensor-repartition')) (byKey.get(r.key!.toString()) ?? byKey.set(r.key!.toString(), new Set()).get(r.key!.toString())!).add(r.partition);
  assert.equal(byKey.get('s1')!.size, 1);
  const counts = driver.output<Windowed<string>, number>('counts').readKeyValues().map(([w, n]) => `${w.key}@${w.start}=${n}`);
  assert.deepEqual(counts.filter((c) => c.startsWith('s1')), ['s1@100=1', 's1@100=2']);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
});

test('a keyless stream can be repartitioned; a bad partition count does not compile', () => {
  const app = new TopologyBuilder({ appId: 'logs' });
  app.stream('lines', { value: stringSerde }).repartition({ partitions: 4 }).to('lines-copy');
  const compiled = compile(app);
  assert.ok(compiled.topics.some((t) => t.name === 'logs-KSTREAM-REPARTITION-0000000001-repartition' && t.partitions === 4));
  const bad = new TopologyBuilder({ appId: 'logs' });
  bad.stream('lines', { value: stringSerde }).repartition({ partitions: 0 }).to('lines-copy');
  assert.throws(() => compile(bad), { code: 'INVALID_STAGE_OPTION' });
});
