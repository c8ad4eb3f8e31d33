import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { compile } from '../../src/graph/compile.ts';
import { describeTopology, describeJson, registerDescribe, type TopologyDescription } from '../../src/cli/describe.ts';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { ordersTopology } from '../../topology/orders.ts';
import { wordCountTopology } from '../../topology/word-count.ts';

// Golden outputs: a change here changes internal topic names or node names, which breaks running
// applications (changelogs and repartition topics are found by name). Update only on purpose.
const ORDERS_TEXT = `Topology: orders
Topologies:
   Sub-topology: 0 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders]) [inside the Kafka transaction]
      --> order-events-seen
    Processor: order-events-seen (dedupe, stores: [order-events-seen]) [inside the Kafka transaction]
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (selectKey, stores: []) [inside the Kafka transaction]
      --> order-versions-repartition-sink
      <-- order-events-seen
    Sink: order-versions-repartition-sink (topic: orders-order-versions-repartition) [inside the Kafka transaction]
      <-- KSTREAM-KEY-SELECT-0000000002
   Sub-topology: 1 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: order-versions-repartition-source (topics: [orders-order-versions-repartition]) [inside the Kafka transaction]
      --> order-versions
    Processor: order-versions (latestByVersion, stores: [order-versions]) [inside the Kafka transaction]
      --> KSTREAM-GROUPBY-0000000004
      <-- order-versions-repartition-source
    Processor: KSTREAM-GROUPBY-0000000004 (groupBy, stores: []) [inside the Kafka transaction]
      --> customer-paid-repartition-sink
      <-- order-versions
    Sink: customer-paid-repartition-sink (topic: orders-customer-paid-repartition) [inside the Kafka transaction]
      <-- KSTREAM-GROUPBY-0000000004
   Sub-topology: 2 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: customer-paid-repartition-source (topics: [orders-customer-paid-repartition]) [inside the Kafka transaction]
      --> customer-paid
    Processor: customer-paid (aggregate, stores: [customer-paid]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000006
      <-- customer-paid-repartition-source
    Processor: KTABLE-TOSTREAM-0000000006 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-MAPVALUES-0000000007
      <-- customer-paid
    Processor: KSTREAM-MAPVALUES-0000000007 (mapValues, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000008
      <-- KTABLE-TOSTREAM-0000000006
    Sink: KSTREAM-SINK-0000000008 (topic: customer-paid-totals) [inside the Kafka transaction]
      <-- KSTREAM-MAPVALUES-0000000007
Stores:
  order-events-seen (dedupe, node order-events-seen, sub-topology 0, changelog orders-order-events-seen-changelog)
  order-versions (version, node order-versions, sub-topology 1, changelog orders-order-versions-changelog)
  customer-paid (key-value, node customer-paid, sub-topology 2, changelog orders-customer-paid-changelog)
  (interactive queries, on a replica run with --http-port: GET /stores/<store>/<key>, a window store's windows of a key, /stores/<store>?prefix=; /metadata/<store>/<key>?route=1 from any replica with --advertised-url)
Topics:
  orders (source, external, cleanup.policy=delete)
  customer-paid-totals (sink, external, cleanup.policy=delete)
  orders-order-versions-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 1)
  orders-customer-paid-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 2)
  orders-order-events-seen-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 0)
  orders-order-versions-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 1)
  orders-customer-paid-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 2)
  orders-dlq (dead-letter, internal, cleanup.policy=delete, message.timestamp.type=LogAppendTime)
Warnings:
  output topic customer-paid-totals (sink KSTREAM-SINK-0000000008) gets results of customer-paid stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)`;

const WORD_COUNT_TEXT = `Topology: word-count
Topologies:
   Sub-topology: 0 [stateless: runs on the processing thread under onceflow run]
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines]) [inside the Kafka transaction]
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (flatMapValues, stores: []) [inside the Kafka transaction]
      --> KSTREAM-GROUPBY-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-GROUPBY-0000000002 (groupBy, stores: []) [inside the Kafka transaction]
      --> counts-repartition-sink
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Sink: counts-repartition-sink (topic: word-count-counts-repartition) [inside the Kafka transaction]
      <-- KSTREAM-GROUPBY-0000000002
   Sub-topology: 1 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: counts-repartition-source (topics: [word-count-counts-repartition]) [inside the Kafka transaction]
      --> counts
    Processor: counts (aggregate, stores: [counts]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000004
      <-- counts-repartition-source
    Processor: KTABLE-TOSTREAM-0000000004 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000005
      <-- counts
    Sink: KSTREAM-SINK-0000000005 (topic: word-counts) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000004
Stores:
  counts (key-value, node counts, sub-topology 1, changelog word-count-counts-changelog)
  (interactive queries, on a replica run with --http-port: GET /stores/<store>/<key>, a window store's windows of a key, /stores/<store>?prefix=; /metadata/<store>/<key>?route=1 from any replica with --advertised-url)
Topics:
  lines (source, external, cleanup.policy=delete)
  word-counts (sink, external, cleanup.policy=delete)
  word-count-counts-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 1)
  word-count-counts-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 1)
  word-count-dlq (dead-letter, internal, cleanup.policy=delete, message.timestamp.type=LogAppendTime)
Warnings:
  output topic word-counts (sink KSTREAM-SINK-0000000005) gets results of counts stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)`;

const WORD_COUNT_MERMAID = `flowchart LR
  subgraph sub0["Sub-topology 0<br/>processing thread"]
    n0["KSTREAM-SOURCE-0000000000<br/>source"]
    n1["KSTREAM-FLATMAPVALUES-0000000001<br/>flatMapValues"]
    n2["KSTREAM-GROUPBY-0000000002<br/>groupBy"]
    n3["counts-repartition-sink<br/>repartitionSink"]
  end
  subgraph sub1["Sub-topology 1<br/>processing thread"]
    n4["counts-repartition-source<br/>repartitionSource"]
    n5["counts<br/>aggregate<br/>stores: counts"]
    n6["KTABLE-TOSTREAM-0000000004<br/>toStream"]
    n7["KSTREAM-SINK-0000000005<br/>sink"]
  end
  t0[("lines")]
  t1[("word-counts")]
  t2[("word-count-counts-repartition")]
  t3[("word-count-counts-changelog")]
  t4[("word-count-dlq")]
  t0 --> n0
  n0 --> n1
  n1 --> n2
  n2 --> n3
  n3 --> t2
  t2 --> n4
  n4 --> n5
  n5 --> n6
  n5 -.-> t3
  n6 --> n7
  n7 --> t1
  classDef atLeastOnce stroke-dasharray: 5 5,stroke:#d33`;

test('describe text of the orders example is pinned', () => {
  assert.equal(describeTopology(compile(ordersTopology()), 'text'), ORDERS_TEXT);
});

test('describe text of the word-count example is pinned', () => {
  assert.equal(describeTopology(compile(wordCountTopology()), 'text'), WORD_COUNT_TEXT);
});

test('describe mermaid of the word-count example is pinned', () => {
  assert.equal(describeTopology(compile(wordCountTopology()), 'mermaid'), WORD_COUNT_MERMAID);
});

test('describe json carries sub-topologies, stores, topics and the EOS boundary of every node', () => {
  const d = JSON.parse(describeTopology(compile(ordersTopology()), 'json')) as TopologyDescription;
  assert.equal(d.appId, 'orders');
  assert.equal(d.deadLetterTopic, 'orders-dlq');
  assert.deepEqual(d.subtopologies.map((s) => s.id), [0, 1, 2]);
  // Each holds a store: none runs on the processing thread. word-count's first (split, group by word) does.
  assert.deepEqual(d.subtopologies.map((s) => s.processingThread), [false, false, false]);
  assert.deepEqual(describeJson(compile(wordCountTopology())).subtopologies.map((s) => s.processingThread), [true, false]);
  assert.deepEqual(d.stores.map((s) => [s.name, s.kind, s.subtopology]), [['order-events-seen', 'dedupe', 0], ['order-versions', 'version', 1], ['customer-paid', 'key-value', 2]]);
  const all = d.subtopologies.flatMap((s) => s.nodes);
  assert.ok(all.every((n) => n.boundary === 'transactional' && n.eos === 'inside the Kafka transaction'));
  const src = all.find((n) => n.name === 'KSTREAM-SOURCE-0000000000')!;
  assert.deepEqual([src.role, src.topic, src.successors, src.keySerde, src.valueSerde], ['source', 'orders', ['order-events-seen'], 'string', 'json']);
  assert.deepEqual(d.topics.find((t) => t.kind === 'changelog'), { name: 'orders-order-events-seen-changelog', kind: 'changelog', internal: true, cleanupPolicy: 'compact', config: { 'cleanup.policy': 'compact' }, subtopology: 0 });
  assert.deepEqual(describeJson(compile(ordersTopology())), d);
});

test('effect stages are marked outside the transaction, with where their idempotency key comes from', () => {
  const app = new TopologyBuilder({ appId: 'fx' });
  const s = app.stream('in', { key: stringSerde, value: jsonSerde<{ id: string }>() });
  s.effect('notify', async () => undefined, { idempotencyKey: (_k, v) => v.id }).to('out');
  s.effect('audit', async () => undefined).to('audit');
  const c = compile(app);
  const text = describeTopology(c, 'text');
  assert.match(text, /Processor: notify \(effect, stores: \[\]\) \[outside the transaction: at-least-once \(idempotency key: from the idempotencyKey function\)\]/);
  assert.ok(text.includes('Processor: audit (effect, stores: []) [outside the transaction: at-least-once (idempotency key: ${topic}-${partition}-${offset} of the source record)]'));
  const mermaid = describeTopology(c, 'mermaid');
  assert.match(mermaid, /class n\d+,n\d+ atLeastOnce/);
  const json = JSON.parse(describeTopology(c, 'json')) as TopologyDescription;
  assert.deepEqual(json.subtopologies[0]!.nodes.filter((n) => n.boundary === 'external').map((n) => n.name), ['notify', 'audit']);
});

test('the describe command loads a topology file and honours --format, --json and --app-id', async () => {
  const out: string[] = [];
  const write = (text: string) => void out.push(text);
  const program = new Command().exitOverride();
  registerDescribe(program, { write });
  await program.parseAsync(['describe', 'topology/word-count.ts', '--json', '--app-id', 'wc-test'], { from: 'user' });
  const program2 = new Command().exitOverride();
  registerDescribe(program2, { write });
  await program2.parseAsync(['describe', 'topology/word-count.ts', '--format', 'mermaid'], { from: 'user' });
  const json = JSON.parse(out[0]!) as TopologyDescription;
  assert.equal(json.appId, 'wc-test');
  assert.equal(json.sourceFile, 'topology/word-count.ts');
  assert.ok(json.topics.some((t) => t.name === 'wc-test-counts-repartition'));
  assert.ok(out[1]!.startsWith('flowchart LR\n'));
});

test('an invalid --format is refused by the command line', () => {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
  registerDescribe(program);
  assert.throws(() => program.parse(['describe', 'x.ts', '--format', 'yaml'], { from: 'user' }), /Allowed choices are text, json, mermaid/);
});

test('loading a file whose default export is not a builder fails with a typed error', async () => {
  const { loadTopology } = await import('../../src/dsl/load.ts');
  await assert.rejects(loadTopology('processors/words.ts'), (e: { code?: string; message: string }) => e.code === 'NOT_A_TOPOLOGY' && e.message.includes('default export is missing'));
  await assert.rejects(loadTopology('topology/does-not-exist.ts'), (e: { code?: string }) => e.code === 'TOPOLOGY_LOAD_FAILED');
});
