import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { hoppingWindow, tumblingWindow, type WindowOptions } from '../../src/dsl/windows.ts';
import type { Windowed, WindowSpec } from '../../src/dsl/types.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { splitWindowStoreKey, windowedSerde, windowStartsFor, windowStoreKey } from '../../src/state/windowed.ts';

const SEC = 1000;

function windowedCounts(window: WindowSpec) {
  const app = new TopologyBuilder({ appId: 'clicks' });
  app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(window).count({ name: 'per-window' }).toStream().to('click-counts');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('clicks');
  const output = driver.output<Windowed<string>, number>('click-counts');
  const at = (key: string, timestamp: number) => input.pipe(key, 'x', { timestamp });
  const read = () => output.readKeyValues().map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`);
  return { driver, at, read };
}

test('tumbling windows count per key and window, emitting every update', () => {
  const { at, read } = windowedCounts(tumblingWindow(10 * SEC, { graceMs: 5 * SEC }));
  at('a', 1 * SEC);
  at('a', 9 * SEC);
  at('b', 9.5 * SEC);
  at('a', 10 * SEC);
  assert.deepEqual(read(), ['a@0-10000=1', 'a@0-10000=2', 'b@0-10000=1', 'a@10000-20000=1']);
});

test('records later than the grace period are dropped and counted; within grace they still count', () => {
  const { driver, at, read } = windowedCounts(tumblingWindow(10 * SEC, { graceMs: 5 * SEC }));
  at('a', 2 * SEC);
  at('a', 14 * SEC); // stream time 14s: window [0,10) closes at 15s
  at('a', 3 * SEC); // late but within grace
  at('a', 15 * SEC); // stream time 15s: [0,10) is closed
  at('a', 4 * SEC); // past grace
  assert.deepEqual(read(), ['a@0-10000=1', 'a@10000-20000=1', 'a@0-10000=2', 'a@10000-20000=2']);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  assert.deepEqual(driver.deadLetters(), []);
  // the closed window left the store, with a tombstone on its changelog
  assert.equal(driver.store<Windowed<string>, number>('per-window').get({ key: 'a', start: 0, end: 10 * SEC }), undefined);
  assert.equal(driver.store<Windowed<string>, number>('per-window').get({ key: 'a', start: 10 * SEC, end: 20 * SEC }), 2);
  const log = driver.records('clicks-per-window-changelog').filter((r) => splitWindowStoreKey(r.key!).start === 0);
  assert.deepEqual(log.map((r) => r.value?.toString() ?? null), ['1', '2', null]);
});

test('hopping windows put a record in every window that contains it', () => {
  const { driver, at, read } = windowedCounts(hoppingWindow(10 * SEC, 5 * SEC, { graceMs: 0 }));
  at('a', 7 * SEC); // windows [0,10) and [5,15)
  at('a', 12 * SEC); // [5,15) and [10,20); [0,10) closes
  at('a', 9 * SEC); // only [5,15) still open: counted there, not dropped
  at('a', 16 * SEC); // [10,20) and [15,25); [5,15) closes
  at('a', 14 * SEC); // its windows [5,15) closed, [10,20) open
  at('a', 4 * SEC); // [0,10) closed, and it belongs to no other window: dropped
  assert.deepEqual(read(), [
    'a@0-10000=1',
    'a@5000-15000=1',
    'a@5000-15000=2',
    'a@10000-20000=1',
    'a@5000-15000=3',
    'a@10000-20000=2',
    'a@15000-25000=1',
    'a@10000-20000=3',
  ]);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
});

test('late records can be sent to the dead-letter topic as well as counted', () => {
  const { driver, at } = windowedCounts(tumblingWindow(10 * SEC, { lateRecords: 'dead-letter' }));
  at('a', 20 * SEC);
  at('a', 1 * SEC);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  assert.deepEqual(driver.deadLetters().map((d) => [d.code, d.source.offset, d.stage]), [['LATE_RECORD', 1, 'per-window']]);
});

test('emitFinal emits one result per window when stream time closes it', () => {
  const opts: WindowOptions = { graceMs: 2 * SEC, emitFinal: true };
  const { driver, at, read } = windowedCounts(tumblingWindow(10 * SEC, opts));
  at('a', 1 * SEC);
  at('a', 2 * SEC);
  at('b', 3 * SEC);
  at('a', 11 * SEC);
  assert.deepEqual(read(), []);
  at('c', 12 * SEC); // closes [0,10)
  assert.deepEqual(read().sort(), ['a@0-10000=2', 'b@0-10000=1']);
  driver.advanceStreamTime(10 * SEC); // driver clock 12s -> 22s closes [10,20)
  assert.deepEqual(read().sort(), ['a@10000-20000=1', 'c@10000-20000=1']);
});

test('windowed aggregate with a custom state, keyed by a derived key', () => {
  const app = new TopologyBuilder({ appId: 'temps' });
  app
    .stream('readings', { key: stringSerde, value: jsonSerde<{ sensor: string; celsius: number }>(), timestamp: () => 60_000 })
    .groupBy((_k, v) => v.sensor, { key: stringSerde })
    .windowedBy(tumblingWindow(60_000))
    .aggregate(() => ({ max: -Infinity }), (_k, v, agg) => ({ max: Math.max(agg.max, v.celsius) }), { state: jsonSerde<{ max: number }>(), name: 'max-temp' })
    .toStream()
    .to('max-temps', { value: jsonSerde<{ max: number }>() });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, { sensor: string; celsius: number }>('readings');
  input.pipe('x', { sensor: 's1', celsius: 20 }, { timestamp: 999_999 });
  input.pipe('y', { sensor: 's1', celsius: 25 });
  const out = driver.output<Windowed<string>, { max: number }>('max-temps').readKeyValues();
  // the extractor set event time to 60s regardless of the record timestamp
  assert.deepEqual(out, [[{ key: 's1', start: 60_000, end: 120_000 }, { max: 20 }], [{ key: 's1', start: 60_000, end: 120_000 }, { max: 25 }]]);
});

test('window key layouts round-trip', () => {
  const serde = windowedSerde(stringSerde);
  const ctx = { topic: 't', role: 'key' as const };
  const bytes = serde.serialize({ key: 'k1', start: 5, end: 15 }, ctx)!;
  assert.equal(bytes.length, 2 + 16);
  assert.deepEqual(serde.deserialize(bytes, ctx), { key: 'k1', start: 5, end: 15 });
  assert.equal(windowedSerde(stringSerde), serde);
  assert.throws(() => serde.deserialize(Buffer.from('short'), ctx), RangeError);
  const sk = windowStoreKey(Buffer.from('abc'), 1_700_000_000_000);
  assert.deepEqual(splitWindowStoreKey(sk), { inner: Buffer.from('abc'), start: 1_700_000_000_000 });
  assert.deepEqual(windowStartsFor(12, 10, 5, []), [5, 10]);
  assert.deepEqual(windowStartsFor(3, 10, 5, []), [0]);
  assert.deepEqual(windowStartsFor(10, 10, 10, []), [10]);
});
