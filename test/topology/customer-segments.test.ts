import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJson, describeTopology } from '../../src/cli/describe.ts';
import { compile } from '../../src/graph/compile.ts';
import { customerSegmentsTopology } from '../../topology/customer-segments.ts';

// Golden output, as test/topology/describe.test.ts pins its examples': the re-grouping's node, store and
// topic names are what a running application finds its changelogs and repartition topics by.
const SEGMENTS_TEXT = `Topology: customer-segments
Topologies:
   Sub-topology: 0 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: KSTREAM-SOURCE-0000000000 (topics: [customers]) [inside the Kafka transaction]
      --> KTABLE-TOTABLE-0000000001
    Processor: KTABLE-TOTABLE-0000000001 (toTable, stores: [customers]) [inside the Kafka transaction]
      --> by-segment
      <-- KSTREAM-SOURCE-0000000000
    Processor: by-segment (tableGroupBy, stores: [by-segment]) [inside the Kafka transaction]
      --> segment-counts-repartition-sink, segment-balances-repartition-sink
      <-- KTABLE-TOTABLE-0000000001
    Sink: segment-counts-repartition-sink (topic: customer-segments-segment-counts-repartition) [inside the Kafka transaction]
      <-- by-segment
    Sink: segment-balances-repartition-sink (topic: customer-segments-segment-balances-repartition) [inside the Kafka transaction]
      <-- by-segment
   Sub-topology: 1 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: segment-counts-repartition-source (topics: [customer-segments-segment-counts-repartition]) [inside the Kafka transaction]
      --> segment-counts
    Processor: segment-counts (aggregate, stores: [segment-counts]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000004
      <-- segment-counts-repartition-source
    Processor: KTABLE-TOSTREAM-0000000004 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000005
      <-- segment-counts
    Sink: KSTREAM-SINK-0000000005 (topic: segment-counts) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000004
   Sub-topology: 2 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)]
    Source: segment-balances-repartition-source (topics: [customer-segments-segment-balances-repartition]) [inside the Kafka transaction]
      --> segment-balances
    Processor: segment-balances (aggregate, stores: [segment-balances]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000007
      <-- segment-balances-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000008
      <-- segment-balances
    Sink: KSTREAM-SINK-0000000008 (topic: segment-balances) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000007
Stores:
  customers (key-value, node KTABLE-TOTABLE-0000000001, sub-topology 0, changelog customers (its source topic))
  by-segment (key-value, node by-segment, sub-topology 0, changelog customer-segments-by-segment-changelog)
  segment-counts (key-value, node segment-counts, sub-topology 1, changelog customer-segments-segment-counts-changelog)
  segment-balances (key-value, node segment-balances, sub-topology 2, changelog customer-segments-segment-balances-changelog)
  (interactive queries, on a replica run with --http-port: GET /stores/<store>/<key>, a window store's windows of a key, /stores/<store>?prefix=; /metadata/<store>/<key>?route=1 from any replica with --advertised-url)
Topics:
  customers (source, external, cleanup.policy=delete)
  segment-counts (sink, external, cleanup.policy=delete)
  segment-balances (sink, external, cleanup.policy=delete)
  customer-segments-segment-counts-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 1)
  customer-segments-segment-balances-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 2)
  customer-segments-by-segment-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 0)
  customer-segments-segment-counts-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 1)
  customer-segments-segment-balances-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 2)
  customer-segments-dlq (dead-letter, internal, cleanup.policy=delete, message.timestamp.type=LogAppendTime)
Warnings:
  output topic segment-counts (sink KSTREAM-SINK-0000000005) gets results of segment-counts, by-segment, customers stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)
  output topic segment-balances (sink KSTREAM-SINK-0000000008) gets results of segment-balances, by-segment, customers stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)`;

test('describe text of the customer-segments example (table re-grouping) is pinned', () => {
  assert.equal(describeTopology(compile(customerSegmentsTopology()), 'text'), SEGMENTS_TEXT);
});

test('describe json shows the re-grouping stage, its store of placed rows and the table changes it sends to each aggregate', () => {
  const d = describeJson(compile(customerSegmentsTopology()));
  const nodes = d.subtopologies.flatMap((s) => s.nodes);
  const regroup = nodes.find((n) => n.kind === 'tableGroupBy')!;
  assert.deepEqual([regroup.name, regroup.stores, regroup.successors, regroup.keySerde, regroup.valueSerde], ['by-segment', ['by-segment'], ['segment-counts-repartition-sink', 'segment-balances-repartition-sink'], 'string', 'table-change(json)']);
  assert.deepEqual(
    nodes.filter((n) => n.kind === 'repartitionSink').map((n) => [n.topic, n.valueSerde]),
    [
      ['customer-segments-segment-counts-repartition', 'table-change(json)'],
      ['customer-segments-segment-balances-repartition', 'table-change(json)'],
    ],
  );
  assert.deepEqual(d.stores.map((s) => [s.name, s.kind, s.subtopology, s.changelogTopic]), [
    ['customers', 'key-value', 0, 'customers'],
    ['by-segment', 'key-value', 0, 'customer-segments-by-segment-changelog'],
    ['segment-counts', 'key-value', 1, 'customer-segments-segment-counts-changelog'],
    ['segment-balances', 'key-value', 2, 'customer-segments-segment-balances-changelog'],
  ]);
  assert.match(describeTopology(compile(customerSegmentsTopology()), 'mermaid'), /n2\["by-segment<br\/>tableGroupBy<br\/>stores: by-segment"\]/);
});
