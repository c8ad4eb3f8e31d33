import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { ordersTopology } from '../../topology/orders.ts';
import { wordCountTopology } from '../../topology/word-count.ts';

test('re-keying before a stateful stage splits the topology at a repartition topic', () => {
  const c = compile(wordCountTopology());
  assert.deepEqual(c.subtopologies.map((s) => [s.id, s.sourceTopics, s.stores]), [
    [0, ['lines'], []],
    [1, ['word-count-counts-repartition'], ['counts']],
  ]);
  assert.deepEqual(c.inputTopics, ['lines', 'word-count-counts-repartition']);
  assert.equal(c.subtopologyOf('word-count-counts-repartition'), 1);
  assert.equal(c.subtopologyOf('word-counts'), undefined);
});

test('grouping by the existing key needs no repartition', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  app.stream('in', { key: stringSerde, value: jsonSerde<{ n: number }>() }).filter((_k, v) => v.n > 0).groupByKey().count({ name: 'c' }).toStream().to('out');
  const c = compile(app);
  assert.equal(c.subtopologies.length, 1);
  assert.deepEqual(c.topics.map((t) => t.kind), ['source', 'sink', 'changelog', 'dead-letter']);
});

test('generated names are deterministic and stable across compiles; name overrides them', () => {
  const a = [...compile(wordCountTopology()).nodes.keys()];
  const b = [...compile(wordCountTopology()).nodes.keys()];
  assert.deepEqual(a, b);
  assert.deepEqual(a, ['KSTREAM-SOURCE-0000000000', 'KSTREAM-FLATMAPVALUES-0000000001', 'KSTREAM-GROUPBY-0000000002', 'counts-repartition-sink', 'counts-repartition-source', 'counts', 'KTABLE-TOSTREAM-0000000004', 'KSTREAM-SINK-0000000005']);
  const app = new TopologyBuilder({ appId: 'x' });
  app.stream('in', { key: stringSerde, value: stringSerde }).groupByKey().count().toStream().to('out');
  const c = compile(app);
  assert.ok(c.stores.has('KSTREAM-AGGREGATE-STATE-STORE-0000000001'));
  assert.ok(c.topics.some((t) => t.name === 'x-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog'));
});

test('the compile-time app id override renames every internal topic', () => {
  const c = compile(ordersTopology(), { appId: 'run-42' });
  assert.equal(c.appId, 'run-42');
  assert.ok(c.topics.filter((t) => t.internal).every((t) => t.name.startsWith('run-42-')));
  assert.equal(c.deadLetterTopic, 'run-42-dlq');
});

test('resolvePartitions derives internal topic partitions from the sources', () => {
  const c = compile(ordersTopology());
  const plan = c.resolvePartitions(new Map([['orders', 6]]));
  assert.deepEqual(Object.fromEntries(plan.topics.map((t) => [t.name, t.partitions])), {
    orders: 6,
    'customer-paid-totals': undefined,
    'orders-order-versions-repartition': 6,
    'orders-customer-paid-repartition': 6,
    'orders-order-events-seen-changelog': 6,
    'orders-order-versions-changelog': 6,
    'orders-customer-paid-changelog': 6,
    'orders-dlq': 6,
  });
  assert.deepEqual([...plan.tasksPerSubtopology], [[0, 6], [1, 6], [2, 6]]);
  assert.throws(() => c.resolvePartitions({}), { code: 'MISSING_PARTITION_COUNT' });
});

test('a sub-topology reading a wider source widens its repartition topic', () => {
  const app = new TopologyBuilder({ appId: 'm' });
  const counts = app.stream('narrow', { key: stringSerde, value: stringSerde }).selectKey((_k, v) => v, { key: stringSerde }).groupByKey().count({ name: 'c' }).toStream();
  counts.merge(app.stream('wide', { key: stringSerde, value: jsonSerde<number>() }).selectKey((k) => k, { key: stringSerde }).mapValues((n) => n)).to('out', { value: jsonSerde<number>() });
  const c = compile(app);
  const plan = c.resolvePartitions({ narrow: 2, wide: 8 });
  const parts = Object.fromEntries(plan.topics.map((t) => [t.name, t.partitions]));
  assert.equal(parts['m-c-repartition'], 8);
  assert.equal(parts['m-c-changelog'], 8);
});

test('serdeUsages lists each serde per topic and role once, changelogs included', () => {
  const usages = compile(wordCountTopology()).serdeUsages();
  const list = usages.map((u) => `${u.ctx.topic}/${u.ctx.role}:${u.serde.name}`);
  assert.deepEqual(list, [
    'lines/key:string',
    'lines/value:string',
    'word-count-counts-repartition/key:string',
    'word-count-counts-repartition/value:string',
    'word-counts/key:string',
    'word-counts/value:json',
    'word-count-counts-changelog/key:string',
    'word-count-counts-changelog/value:number',
  ]);
});

test('totalRetryBudgetMs is the worst case over sub-topologies, with effect overrides', () => {
  const app = new TopologyBuilder({ appId: 'b', retry: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 150 } });
  app.stream('in', { key: stringSerde, value: stringSerde }).effect('call', async () => undefined, { retry: { maxAttempts: 4 } }).to('out');
  // sink: 100 + 150; effect with 4 attempts: 100 + 150 + 150
  assert.equal(compile(app).totalRetryBudgetMs(), 250 + 400);
  assert.equal(compile(wordCountTopology()).totalRetryBudgetMs(), 3 * (100 + 200));
});
