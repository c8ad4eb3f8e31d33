import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeJson, describeTopology } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { compile } from '../../src/graph/compile.ts';
import { orderCustomersTopology } from '../../topology/order-customers.ts';

// Golden output, as test/topology/describe.test.ts pins its examples': the foreign-key joins' node,
// store and topic names are what a running application finds its changelogs and repartition topics by.
const ORDER_CUSTOMERS_TEXT = `Topology: order-customers
Topologies:
   Sub-topology: 0 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)] [inputs taken in timestamp order, waiting for an input that is behind (maxTaskIdleMs)]
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders]) [inside the Kafka transaction]
      --> KTABLE-TOTABLE-0000000001
    Processor: KTABLE-TOTABLE-0000000001 (toTable, stores: [orders]) [inside the Kafka transaction]
      --> enriched-subscription-registration, enriched, all-subscription-registration, all
      <-- KSTREAM-SOURCE-0000000000
    Processor: enriched-subscription-registration (fkSubscribe, stores: [enriched-foreign-keys]) [inside the Kafka transaction]
      --> enriched-subscription-repartition-sink
      <-- KTABLE-TOTABLE-0000000001
    Sink: enriched-subscription-repartition-sink (topic: order-customers-enriched-subscription-repartition) [inside the Kafka transaction]
      <-- enriched-subscription-registration
    Source: enriched-response-repartition-source (topics: [order-customers-enriched-response-repartition]) [inside the Kafka transaction]
      --> enriched
    Processor: enriched (fkResponseJoin, stores: [], reads tables: [KTABLE-TOTABLE-0000000001]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000007
      <-- enriched-response-repartition-source, KTABLE-TOTABLE-0000000001
    Processor: KTABLE-TOSTREAM-0000000007 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000008
      <-- enriched
    Sink: KSTREAM-SINK-0000000008 (topic: enriched-orders) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000007
    Processor: all-subscription-registration (fkSubscribe, stores: [all-foreign-keys]) [inside the Kafka transaction]
      --> all-subscription-repartition-sink
      <-- KTABLE-TOTABLE-0000000001
    Sink: all-subscription-repartition-sink (topic: order-customers-all-subscription-repartition) [inside the Kafka transaction]
      <-- all-subscription-registration
    Source: all-response-repartition-source (topics: [order-customers-all-response-repartition]) [inside the Kafka transaction]
      --> all
    Processor: all (fkResponseJoin, stores: [], reads tables: [KTABLE-TOTABLE-0000000001]) [inside the Kafka transaction]
      --> KTABLE-TOSTREAM-0000000012
      <-- all-response-repartition-source, KTABLE-TOTABLE-0000000001
    Processor: KTABLE-TOSTREAM-0000000012 (toStream, stores: []) [inside the Kafka transaction]
      --> KSTREAM-SINK-0000000013
      <-- all
    Sink: KSTREAM-SINK-0000000013 (topic: all-orders) [inside the Kafka transaction]
      <-- KTABLE-TOSTREAM-0000000012
   Sub-topology: 1 [stateful: its tasks and stores live on a processing thread under onceflow run (in-memory stores)] [inputs taken in timestamp order, waiting for an input that is behind (maxTaskIdleMs)]
    Source: KSTREAM-SOURCE-0000000002 (topics: [customers]) [inside the Kafka transaction]
      --> KTABLE-TOTABLE-0000000003
    Processor: KTABLE-TOTABLE-0000000003 (toTable, stores: [customers]) [inside the Kafka transaction]
      --> enriched-subscription-processor, all-subscription-processor
      <-- KSTREAM-SOURCE-0000000002
    Source: enriched-subscription-repartition-source (topics: [order-customers-enriched-subscription-repartition]) [inside the Kafka transaction]
      --> enriched-subscription-processor
    Processor: enriched-subscription-processor (fkSubscriptionJoin, stores: [enriched-subscriptions], reads tables: [KTABLE-TOTABLE-0000000003]) [inside the Kafka transaction]
      --> enriched-response-repartition-sink
      <-- enriched-subscription-repartition-source, KTABLE-TOTABLE-0000000003
    Sink: enriched-response-repartition-sink (topic: order-customers-enriched-response-repartition) [inside the Kafka transaction]
      <-- enriched-subscription-processor
    Source: all-subscription-repartition-source (topics: [order-customers-all-subscription-repartition]) [inside the Kafka transaction]
      --> all-subscription-processor
    Processor: all-subscription-processor (fkSubscriptionJoin, stores: [all-subscriptions], reads tables: [KTABLE-TOTABLE-0000000003]) [inside the Kafka transaction]
      --> all-response-repartition-sink
      <-- all-subscription-repartition-source, KTABLE-TOTABLE-0000000003
    Sink: all-response-repartition-sink (topic: order-customers-all-response-repartition) [inside the Kafka transaction]
      <-- all-subscription-processor
Stores:
  orders (key-value, node KTABLE-TOTABLE-0000000001, sub-topology 0, changelog orders (its source topic))
  customers (key-value, node KTABLE-TOTABLE-0000000003, sub-topology 1, changelog customers (its source topic))
  enriched-foreign-keys (key-value, node enriched-subscription-registration, sub-topology 0, changelog order-customers-enriched-foreign-keys-changelog)
  enriched-subscriptions (key-value, node enriched-subscription-processor, sub-topology 1, changelog order-customers-enriched-subscriptions-changelog)
  all-foreign-keys (key-value, node all-subscription-registration, sub-topology 0, changelog order-customers-all-foreign-keys-changelog)
  all-subscriptions (key-value, node all-subscription-processor, sub-topology 1, changelog order-customers-all-subscriptions-changelog)
  (interactive queries, on a replica run with --http-port: GET /stores/<store>/<key>, a window store's windows of a key, /stores/<store>?prefix=; /metadata/<store>/<key>?route=1 from any replica with --advertised-url)
Co-partition groups (same partition count, key serde and partitioner):
  enriched-subscription-processor (sub-topology 1): [customers, order-customers-enriched-subscription-repartition, order-customers-all-subscription-repartition]
  enriched (sub-topology 0): [orders, order-customers-enriched-response-repartition, order-customers-all-response-repartition]
  all-subscription-processor (sub-topology 1): [customers, order-customers-enriched-subscription-repartition, order-customers-all-subscription-repartition]
  all (sub-topology 0): [orders, order-customers-enriched-response-repartition, order-customers-all-response-repartition]
Topics:
  orders (source, external, cleanup.policy=delete)
  customers (source, external, cleanup.policy=delete)
  enriched-orders (sink, external, cleanup.policy=delete)
  all-orders (sink, external, cleanup.policy=delete)
  order-customers-enriched-subscription-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 1)
  order-customers-enriched-response-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 0)
  order-customers-all-subscription-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 1)
  order-customers-all-response-repartition (repartition, internal, cleanup.policy=delete, retention.ms=-1, retention.bytes=-1, segment.bytes=52428800, segment.ms=600000, partitions=tasks of sub-topology 0)
  order-customers-enriched-foreign-keys-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 0)
  order-customers-enriched-subscriptions-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 1)
  order-customers-all-foreign-keys-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 0)
  order-customers-all-subscriptions-changelog (changelog, internal, cleanup.policy=compact, partitions=tasks of sub-topology 1)
  order-customers-dlq (dead-letter, internal, cleanup.policy=delete, message.timestamp.type=LogAppendTime)
Warnings:
  output topic enriched-orders (sink KSTREAM-SINK-0000000008) gets results of enriched-subscriptions, enriched-foreign-keys, orders, customers stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)
  output topic all-orders (sink KSTREAM-SINK-0000000013) gets results of all-subscriptions, all-foreign-keys, orders, customers stamped with their input's event time: records older than the topic's retention.ms are deleted by the broker at its next retention check, so a backfill's results can vanish after they are written. Give the topic a retention longer than the oldest input you may replay, or retention.ms=-1 (docs/operations.md#output-topics-and-event-time)`;

test('describe text of the order-customers example (foreign-key joins) is pinned', () => {
  assert.equal(describeTopology(compile(orderCustomersTopology()), 'text'), ORDER_CUSTOMERS_TEXT);
});

test('describe json shows the three stages of a foreign-key join, the serdes of its two topics and its two stores', () => {
  const d = describeJson(compile(orderCustomersTopology()));
  const nodes = d.subtopologies.flatMap((s) => s.nodes);
  const stage = (kind: string) => nodes.filter((n) => n.kind === kind).map((n) => [n.name, n.stores, n.successors]);
  assert.deepEqual(stage('fkSubscribe'), [
    ['enriched-subscription-registration', ['enriched-foreign-keys'], ['enriched-subscription-repartition-sink']],
    ['all-subscription-registration', ['all-foreign-keys'], ['all-subscription-repartition-sink']],
  ]);
  assert.deepEqual(stage('fkSubscriptionJoin'), [
    ['enriched-subscription-processor', ['enriched-subscriptions'], ['enriched-response-repartition-sink']],
    ['all-subscription-processor', ['all-subscriptions'], ['all-response-repartition-sink']],
  ]);
  assert.deepEqual(stage('fkResponseJoin'), [
    ['enriched', [], ['KTABLE-TOSTREAM-0000000007']],
    ['all', [], ['KTABLE-TOSTREAM-0000000012']],
  ]);
  assert.deepEqual(
    nodes.filter((n) => n.kind === 'repartitionSink' && n.name.startsWith('enriched')).map((n) => [n.topic, n.keySerde, n.valueSerde]),
    [
      ['order-customers-enriched-subscription-repartition', 'string', 'fk-subscription(string)'],
      ['order-customers-enriched-response-repartition', 'string', 'fk-response(json)'],
    ],
  );
  assert.deepEqual(
    d.stores.filter((s) => s.name.startsWith('enriched')).map((s) => [s.name, s.subtopology, s.changelogTopic]),
    [
      ['enriched-foreign-keys', 0, 'order-customers-enriched-foreign-keys-changelog'],
      ['enriched-subscriptions', 1, 'order-customers-enriched-subscriptions-changelog'],
    ],
  );
  assert.match(describeTopology(compile(orderCustomersTopology()), 'mermaid'), /n17\["enriched-subscription-processor<br\/>fkSubscriptionJoin<br\/>stores: enriched-subscriptions"\]/);
});

test("the console's graph shows the loop: sub-topology 0 writes the subscriptions sub-topology 1 reads, and reads the answers it writes", () => {
  const graph = topologyGraph(describeJson(compile(orderCustomersTopology())));
  const has = (from: string, to: string) => graph.edges.some((e) => e.from === from && e.to === to && e.style === 'flow');
  assert.ok(has('stage:enriched-subscription-repartition-sink', 'topic:order-customers-enriched-subscription-repartition'));
  assert.ok(has('topic:order-customers-enriched-subscription-repartition', 'stage:enriched-subscription-repartition-source'));
  assert.ok(has('stage:enriched-response-repartition-sink', 'topic:order-customers-enriched-response-repartition'));
  assert.ok(has('topic:order-customers-enriched-response-repartition', 'stage:enriched-response-repartition-source'));
  const sub = (id: string) => graph.nodes.find((n) => n.id === id)?.subtopology;
  assert.deepEqual([sub('stage:enriched-subscription-registration'), sub('stage:enriched-subscription-processor'), sub('stage:enriched')], [0, 1, 0]);
});
