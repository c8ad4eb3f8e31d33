import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { JoinWindows } from '../../src/dsl/windows.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

function selfJoin(mode: 'join' | 'leftJoin' | 'outerJoin', repartitioned = false) {
  const app = new TopologyBuilder({ appId: 'self' });
  const clicks = app.stream('clicks', { key: stringSerde, value: stringSerde });
  const keyed = repartitioned ? clicks.selectKey((k) => `user-${k}`) : clicks;
  const joiner = (_k: unknown, a: string | null, b: string | null) => `${a ?? '-'}+${b ?? '-'}`;
  const opts = { value: stringSerde, key: stringSerde, thisValue: stringSerde, otherValue: stringSerde };
  const windows = JoinWindows.of(10).grace(5);
  const joined = mode === 'join' ? keyed.join(keyed, joiner, windows, opts) : mode === 'leftJoin' ? keyed.leftJoin(keyed, joiner, windows, opts) : keyed.outerJoin(keyed, joiner, windows, opts);
  joined.to('pairs', { key: stringSerde });
  const driver = new TopologyTestDriver(app);
  return { driver, clicks: driver.input<string, string>('clicks'), pairs: driver.output<string, string>('pairs') };
}

test("a stream joined with itself pairs each record with every record of its key in the window, itself included, as Kafka Streams' self-join", () => {
  const { clicks, pairs } = selfJoin('join');
  clicks.pipe('u', 'a', { timestamp: 100 });
  clicks.pipe('u', 'b', { timestamp: 105 });
  clicks.pipe('v', 'x', { timestamp: 106 });
  clicks.pipe('u', 'c', { timestamp: 120 });
  assert.deepEqual(pairs.readRecords().map((r) => [r.key, r.value, r.timestamp]), [
    ['u', 'a+a', 100],
    ['u', 'b+a', 105],
    ['u', 'a+b', 105],
    ['u', 'b+b', 105],
    ['v', 'x+x', 106],
    ['u', 'c+c', 120],
  ]);
});

test('a self-join takes an out-of-order record within grace and drops a late one', () => {
  const { driver, clicks, pairs } = selfJoin('join');
  clicks.pipe('u', 'a', { timestamp: 100 });
  clicks.pipe('u', 'z', { timestamp: 130 });
  clicks.pipe('u', 'b', { timestamp: 126 });
  clicks.pipe('u', 'late', { timestamp: 124 });
  assert.deepEqual(pairs.readValues(), ['a+a', 'z+z', 'b+z', 'b+b', 'z+b'], "b's right side meets the window's records by timestamp: itself (126), then z (130)");
  assert.equal(driver.metrics().lateRecordsDropped, 2, '124 + grace 5 is behind stream time 130: dropped by each side of the join, so counted twice');
});

test('a self-join after a key change goes through repartition topics and gives the same pairs', () => {
  const { clicks, pairs } = selfJoin('join', true);
  clicks.pipe('u', 'a', { timestamp: 100 });
  clicks.pipe('u', 'b', { timestamp: 105 });
  assert.deepEqual(pairs.readKeyValues().map(([k, v]) => `${k}:${v}`).sort(), ['user-u:a+a', 'user-u:a+b', 'user-u:b+a', 'user-u:b+b']);
});

test('a left or outer self-join never emits a record unmatched: it always meets itself', () => {
  for (const mode of ['leftJoin', 'outerJoin'] as const) {
    const { driver, clicks, pairs } = selfJoin(mode);
    clicks.pipe('u', 'a', { timestamp: 100 });
    driver.advanceStreamTime(1_000);
    assert.deepEqual(pairs.readValues(), ['a+a'], mode);
  }
});

test('a table joined with itself has a row per key, from the same row on both sides', () => {
  const app = new TopologyBuilder({ appId: 'self' });
  const prices = app.table('prices', { key: stringSerde, value: jsonSerde<number>() });
  prices.join(prices, (_k, a, b) => a + b, { value: jsonSerde<number>() }).toStream().to('doubled', { value: jsonSerde<number | null>({ nullable: true }) });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, number>('prices');
  input.pipe('p', 2);
  input.pipe('p', 5);
  input.pipe('p', null);
  assert.deepEqual(driver.output<string, number | null>('doubled').readValues(), [4, 4, 10, 10, null, null]);
});
