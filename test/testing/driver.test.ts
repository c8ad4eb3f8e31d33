import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { tumblingWindow } from '../../src/dsl/windows.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { murmur2, partitionFor } from '../../src/testing/partitioner.ts';
import { wordCountTopology } from '../../topology/word-count.ts';

function sumTopology() {
  const app = new TopologyBuilder({ appId: 'sum' });
  app.stream('in', { key: stringSerde, value: jsonSerde<number>() }).groupByKey().aggregate(() => 0, (_k, v, s) => s + v, { state: jsonSerde<number>(), name: 'totals' }).toStream().to('out');
  return app;
}

test('with autoCommit off, outputs become visible only on commit and abort rolls state back', () => {
  const driver = new TopologyTestDriver(sumTopology(), { autoCommit: false });
  const input = driver.input<string, number>('in');
  const out = driver.output<string, number>('out');
  input.pipe('a', 1);
  assert.equal(out.isEmpty(), true);
  driver.commit();
  assert.deepEqual(out.readKeyValues(), [['a', 1]]);
  input.pipe('a', 10);
  assert.equal(driver.store<string, number>('totals').get('a'), 11);
  driver.abort();
  assert.equal(driver.store<string, number>('totals').get('a'), 1);
  assert.equal(out.isEmpty(), true);
  input.pipe('a', 2);
  driver.commit();
  assert.deepEqual(out.readKeyValues(), [['a', 3]]);
  assert.deepEqual(driver.records('sum-totals-changelog').map((r) => r.value?.toString()), ['1', '3']);
});

test('a transaction writes one changelog record per key, its last value, while every update goes downstream', () => {
  const driver = new TopologyTestDriver(sumTopology(), { autoCommit: false });
  const input = driver.input<string, number>('in');
  input.pipe('a', 1, { timestamp: 10 });
  input.pipe('b', 5, { timestamp: 11 });
  input.pipe('a', 2, { timestamp: 12 });
  driver.commit();
  assert.deepEqual(driver.output<string, number>('out').readKeyValues(), [['a', 1], ['b', 5], ['a', 3]]);
  assert.deepEqual(driver.records('sum-totals-changelog').map((r) => [r.key?.toString(), r.value?.toString(), r.timestamp]), [
    ['a', '3', 12],
    ['b', '5', 11],
  ]);
});

test('abort with redeliver replays the aborted inputs from the same offsets', () => {
  const driver = new TopologyTestDriver(sumTopology(), { autoCommit: false });
  const input = driver.input<string, number>('in');
  input.pipe('a', 1);
  input.pipe('a', 2);
  driver.abort({ redeliver: true });
  driver.commit();
  assert.deepEqual(driver.output('out').readRecords().map((r) => [r.key, r.value, r.offset]), [['a', 1, 0], ['a', 3, 1]]);
});

test('downstream sub-topologies see repartition records only after the upstream commit', () => {
  const driver = new TopologyTestDriver(wordCountTopology(), { autoCommit: false });
  driver.input<string, string>('lines').pipe('l', 'x y');
  assert.equal(driver.records('word-count-counts-repartition').length, 0);
  assert.deepEqual(driver.store('counts').entries(), []);
  driver.commit();
  assert.equal(driver.records('word-count-counts-repartition').length, 2);
  assert.deepEqual(driver.store<string, number>('counts').entries().sort(), [['x', 1], ['y', 1]]);
});

test('keys are placed by Kafka murmur2 and each partition gets its own task', () => {
  // reference values from the Java client's Utils.murmur2
  assert.equal(murmur2(Buffer.from('21')), -973932308);
  assert.equal(murmur2(Buffer.from('foobar')), -790332482);
  assert.equal(murmur2(Buffer.from('a-little-bit-long-string')), -985981536);
  assert.equal(partitionFor(Buffer.from('foobar'), 3), (-790332482 & 0x7fffffff) % 3);
  const driver = new TopologyTestDriver(sumTopology(), { partitions: 4 });
  const input = driver.input<string, number>('in');
  for (const k of ['a', 'b', 'c', 'd', 'e', 'f']) input.pipe(k, 1);
  const parts = driver.output('out').readRecords().map((r) => r.partition);
  assert.deepEqual(parts, ['a', 'b', 'c', 'd', 'e', 'f'].map((k) => partitionFor(Buffer.from(k), 4)));
  assert.equal(driver.store<string, number>('totals').get('e'), 1);
});

test('unknown topics and stores fail with typed errors', () => {
  const driver = new TopologyTestDriver(sumTopology());
  assert.throws(() => driver.input('nope'), { code: 'UNKNOWN_TEST_TOPIC', message: /input topics: in/ });
  assert.throws(() => driver.output('nope'), { code: 'UNKNOWN_TEST_TOPIC', message: /output topics: out/ });
  assert.throws(() => driver.store('nope'), { code: 'UNKNOWN_TEST_STORE', message: /stores: totals/ });
});

test('the driver refuses a second call while an async one is pending', async () => {
  const app = new TopologyBuilder({ appId: 'busy' });
  app.stream('in', { key: stringSerde, value: stringSerde }).effect('wait', () => new Promise((r) => setImmediate(r))).to('out');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('in');
  const p = input.pipe('a', 'x');
  assert.throws(() => input.pipe('b', 'y'), { code: 'DRIVER_BUSY' });
  await p;
  await input.pipe('b', 'y');
  assert.deepEqual(driver.output('out').readValues(), ['x', 'y']);
});

test('an aborted transaction rewinds stream time, so replays close windows the same way', () => {
  const driver = new TopologyTestDriver(sumTopology(), { autoCommit: false });
  const input = driver.input<string, number>('in');
  input.pipe('a', 1, { timestamp: 100 });
  driver.commit();
  input.pipe('a', 1, { timestamp: 900 });
  assert.equal(driver.task(0, 0).streamTime, 900);
  driver.abort();
  assert.equal(driver.task(0, 0).streamTime, 100);
});

test('driver.query reads a store as interactive queries do: committed state only, by key, prefix, range and window', () => {
  const app = new TopologyBuilder({ appId: 'iq' });
  const words = app.stream('words', { key: stringSerde, value: stringSerde });
  words.groupByKey().count({ name: 'word-counts' });
  words.groupByKey().windowedBy(tumblingWindow(1_000, { graceMs: 10_000 })).count({ name: 'word-counts-per-second' });
  const driver = new TopologyTestDriver(app, { partitions: 3, autoCommit: false });
  const input = driver.input<string, string>('words');
  for (const [word, at] of [['apple', 100], ['apricot', 200], ['apple', 1_500], ['banana', 1_600]] as const) input.pipe(word, word, { timestamp: at });
  const counts = driver.query<string, number>('word-counts');
  // Nothing is committed yet: the open transaction's writes are not what a query sees.
  assert.equal(counts.get('apple'), undefined);
  assert.equal(driver.store<string, number>('word-counts').get('apple'), 2);
  driver.commit();
  assert.equal(counts.get('apple'), 2);
  assert.equal(counts.get('cherry'), undefined);
  assert.deepEqual(counts.scan({ prefix: 'ap' }), [['apple', 2], ['apricot', 1]]);
  assert.deepEqual(counts.scan({ from: 'apricot', to: 'banana' }), [['apricot', 1], ['banana', 1]]);
  assert.deepEqual(counts.scan({ limit: 1 }), [['apple', 2]]);
  assert.deepEqual(driver.query<string, number>('word-counts-per-second').fetch('apple'), [
    { start: 0, end: 1_000, value: 1 },
    { start: 1_000, end: 2_000, value: 1 },
  ]);
  assert.deepEqual(driver.query<string, number>('word-counts-per-second').fetch('apple', 500, 5_000), [{ start: 1_000, end: 2_000, value: 1 }]);
  assert.throws(() => counts.fetch('apple'), { code: 'QUERY_NOT_WINDOWED' });
});
