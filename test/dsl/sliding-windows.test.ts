import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { slidingWindow } from '../../src/dsl/sliding-windows.ts';
import { Suppressed } from '../../src/dsl/suppress.ts';
import type { Windowed, WindowSpec } from '../../src/dsl/types.ts';
import { compile } from '../../src/graph/compile.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

function slidingCounts(window: WindowSpec) {
  const app = new TopologyBuilder({ appId: 'alerts' });
  app.stream('logins', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(window).count({ name: 'per-window' }).toStream().to('login-counts');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('logins');
  const output = driver.output<Windowed<string>, number>('login-counts');
  const at = (key: string, timestamp: number) => input.pipe(key, 'x', { timestamp });
  const read = () => output.readKeyValues().map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`);
  const stored = () =>
    driver
      .store<Windowed<string>, number>('per-window')
      .entries()
      .map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`)
      .sort();
  return { driver, at, read, stored };
}

/** Kafka Streams' windows of a key's records, from the definition: one ending at each record, one starting just after each record with a later one within d. */
function modelCounts(times: readonly number[], d: number): string[] {
  const starts = new Set<number>();
  for (const t of times) {
    starts.add(t - d);
    if (times.some((u) => u > t && u <= t + 1 + d)) starts.add(t + 1);
  }
  return [...starts].map((s) => `k@${s}-${s + d}=${times.filter((t) => t >= s && t <= s + d).length}`).sort();
}

test('in order: each record has its window [t - d, t]; the previous record gets a window starting just after it', () => {
  const { at, read } = slidingCounts(slidingWindow(10, { graceMs: 100 }));
  at('a', 100);
  assert.deepEqual(read(), ['a@90-100=1']);
  at('a', 105); // within 10 of 100: [95,105] holds both, [101,111] (after 100) holds 105
  assert.deepEqual(read(), ['a@101-111=1', 'a@95-105=2']);
  at('a', 120); // 15 after 105: [110,120] holds 120 only; [106,116] would be empty
  assert.deepEqual(read(), ['a@110-120=1']);
});

test('an out-of-order record updates the windows that contain it and creates its own from the existing aggregates', () => {
  const { driver, at, read, stored } = slidingCounts(slidingWindow(10, { graceMs: 100 }));
  at('a', 100);
  at('a', 110);
  read();
  at('a', 104); // out of order: inside [100,110] and [101,111]; its own [94,104] holds 100 and it; [105,115] holds 110
  assert.deepEqual(read(), ['a@100-110=3', 'a@101-111=2', 'a@94-104=2', 'a@105-115=1']);
  assert.deepEqual(stored(), modelCounts([100, 110, 104], 10).map((s) => s.replace('k@', 'a@')));
  // interactive queries read the aggregates (the store's values also carry each window's latest record time)
  assert.deepEqual(driver.query<string, number>('per-window').fetch('a', 100, 105), [
    { start: 100, end: 110, value: 3 },
    { start: 101, end: 111, value: 2 },
    { start: 105, end: 115, value: 1 },
  ]);
});

test('random out-of-order input within grace: the windows and their counts are those of the definition', () => {
  const d = 20;
  const { at, stored } = slidingCounts(slidingWindow(d, { graceMs: 1_000_000 }));
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const times: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t = 1000 + Math.floor(i * 3 + (random() - 0.7) * 60);
    times.push(t);
    at('k', t);
  }
  assert.deepEqual(stored(), modelCounts(times, d));
});

test('a record behind every window it could belong to is late (dropped, dead-lettered); one whose own window closed still counts in the open ones', () => {
  const { driver, at, read } = slidingCounts(slidingWindow(10, { graceMs: 5, lateRecords: 'dead-letter' }));
  at('a', 100);
  at('a', 108); // [90,100]=1, [101,111]=1, [98,108]=2
  read();
  at('b', 120); // stream time 120: a window closes once stream time passes its end + 5
  at('a', 104); // its last possible window [104,114] closed after 119: late
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  assert.deepEqual(driver.deadLetters().map((d) => d.code), ['LATE_RECORD']);
  at('a', 112); // out of order; its own [102,112] closed after 117, but 108's right window [109,119] is open until 124
  assert.deepEqual(read(), ['b@110-120=1', 'a@109-119=1']);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
});

test('emitFinal and suppress emit each window once, when stream time passes its end plus grace', () => {
  for (const make of [
    (app: TopologyBuilder) => app.stream('logins', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(slidingWindow(10, { graceMs: 2, emitFinal: true })).count({ name: 'per-window' }),
    (app: TopologyBuilder) => app.stream('logins', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(slidingWindow(10, { graceMs: 2 })).count({ name: 'per-window' }).suppress(Suppressed.untilWindowCloses()),
  ]) {
    const app = new TopologyBuilder({ appId: 'alerts' });
    make(app).toStream().to('login-counts');
    const driver = new TopologyTestDriver(app);
    const input = driver.input<string, string>('logins');
    const output = driver.output<Windowed<string>, number>('login-counts');
    const read = () => output.readKeyValues().map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`);
    input.pipe('a', 'x', { timestamp: 100 });
    input.pipe('a', 'x', { timestamp: 105 }); // [90,100] closed after 102
    assert.deepEqual(read(), ['a@90-100=1']);
    input.pipe('a', 'x', { timestamp: 112 }); // [95,105] closed after 107
    assert.deepEqual(read(), ['a@95-105=2']);
    input.pipe('a', 'x', { timestamp: 103 }); // out of order: counts in the open [101,111] and [102,112]; its own [93,103] closed
    input.pipe('a', 'x', { timestamp: 114 }); // [101,111] closes
    assert.deepEqual(read(), ['a@101-111=2']);
    input.pipe('a', 'x', { timestamp: 100 }); // every window of 100 closed: late
    assert.equal(driver.metrics().lateRecordsDropped, 1);
    driver.advanceStreamTime(1000);
    // 103's right window [104,114] started from [102,112]'s aggregate before 103 (105 and 112), then got 114
    // 103's right window [104,114] started from [102,112]'s aggregate before 103 (105 and 112), then 114 came: also 114's own window
    assert.deepEqual(read(), ['a@102-112=3', 'a@104-114=3', 'a@106-116=2', 'a@113-123=1']);
  }
});

test('a sliding window needs a positive time difference', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  app.stream('logins', { key: stringSerde, value: jsonSerde<number>() }).groupByKey().windowedBy(slidingWindow(0)).count();
  assert.throws(() => compile(app), { code: 'INVALID_WINDOW' });
});
