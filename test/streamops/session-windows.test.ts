import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { SessionWindows } from '../../src/dsl/session-windows.ts';
import type { Windowed } from '../../src/dsl/types.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { compile } from '../../src/graph/compile.ts';

function sessionCounts(windows: SessionWindows) {
  const app = new TopologyBuilder({ appId: 'visits' });
  app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(windows).count({ name: 'sessions' }).toStream().to('session-counts');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('clicks');
  const output = driver.output<Windowed<string>, number | null>('session-counts');
  const at = (key: string, timestamp: number) => input.pipe(key, 'x', { timestamp });
  const read = () => output.readKeyValues().map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`);
  return { driver, at, read };
}

test('records within the inactivity gap form one session; a record bridging two sessions merges them and deletes the old ones downstream', () => {
  const { driver, at, read } = sessionCounts(SessionWindows.withInactivityGap(10).grace(100));
  at('a', 0);
  at('a', 5); // [0,5]
  at('a', 30); // a new session: 30 is more than 10 after 5
  assert.deepEqual(read(), ['a@0-0=1', 'a@0-0=null', 'a@0-5=2', 'a@30-30=1']);
  at('a', 20); // within 10 of both 5... no: 20-5 = 15 > 10, within 10 of 30 only
  assert.deepEqual(read(), ['a@30-30=null', 'a@20-30=2']);
  at('a', 12); // within 10 of 5 and of 20: bridges [0,5] and [20,30]
  assert.deepEqual(read(), ['a@0-5=null', 'a@20-30=null', 'a@0-30=5']);
  at('a', 3); // inside [0,30]: same session, no delete
  assert.deepEqual(read(), ['a@0-30=6']);
  const store = driver.store<Windowed<string>, number>('sessions');
  assert.deepEqual(store.entries(), [[{ key: 'a', start: 0, end: 30 }, 6]]);
  // the changelog has a tombstone for every merged-away session
  const log = driver.records('visits-sessions-changelog').map((r) => (r.value === null ? 'tombstone' : 'put'));
  assert.equal(log.filter((x) => x === 'tombstone').length, 4);
});

test('keys have sessions of their own', () => {
  const { at, read } = sessionCounts(SessionWindows.withInactivityGap(10).grace(100));
  at('a', 0);
  at('b', 5);
  at('a', 8);
  assert.deepEqual(read(), ['a@0-0=1', 'b@5-5=1', 'a@0-0=null', 'a@0-8=2']);
});

test('a record more than grace behind stream time is late; a session closes once stream time passes end + gap + grace', () => {
  const { driver, at, read } = sessionCounts(SessionWindows.withInactivityGap(10).grace(5).lateRecords('dead-letter'));
  at('a', 0);
  at('b', 14); // stream time 14: a's [0,0] closes after 15
  at('a', 9); // within grace (14 - 9 = 5) and the gap: merges
  assert.deepEqual(read(), ['a@0-0=1', 'b@14-14=1', 'a@0-0=null', 'a@0-9=2']);
  at('b', 30); // [0,9] of a closes (9 + 10 + 5 < 30)
  at('a', 24); // 30 - 24 = 6 > grace: late, although within the gap of [0,9]'s end + gap... no, 24 > 19: would start a new one, but it is late
  assert.deepEqual(read(), ['b@30-30=1']);
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  assert.deepEqual(driver.deadLetters().map((d) => d.code), ['LATE_RECORD']);
  assert.deepEqual(
    driver.store<Windowed<string>, number>('sessions').entries().map(([k]) => `${k.key}@${k.start}-${k.end}`),
    ['b@30-30'], // b's [14,14] closed at 30 too (14 + 10 + 5 < 30)
  );
});

test('emitFinal emits each session once, when it closes, and never the merged-away ones', () => {
  const { driver, at, read } = sessionCounts(SessionWindows.withInactivityGap(10).emitFinal());
  at('a', 0);
  at('a', 8);
  at('a', 15); // [0,8] grows to [0,15]: nothing emitted, no delete either
  assert.deepEqual(read(), []);
  at('b', 25); // stream time 25: [0,15] closes only once it passes 25
  assert.deepEqual(read(), []);
  at('b', 26);
  assert.deepEqual(read(), ['a@0-15=3']);
  at('a', 20); // 26 - 20 > grace 0: late, [0,15] stays final
  assert.equal(driver.metrics().lateRecordsDropped, 1);
  driver.advanceStreamTime(100);
  assert.deepEqual(read(), ['b@25-26=2']);
});

test('session aggregate and reduce merge with the merger', () => {
  const app = new TopologyBuilder({ appId: 'carts' });
  const items = app.stream('items', { key: stringSerde, value: jsonSerde<{ sku: string }>() });
  items
    .groupByKey()
    .windowedBy(SessionWindows.withInactivityGap(10).grace(50))
    .aggregate(() => [] as string[], (_k, v, agg) => [...agg, v.sku], (_k, a, b) => [...a, ...b], { state: jsonSerde<string[]>(), name: 'cart' })
    .toStream()
    .to('carts', { value: jsonSerde<string[] | null>({ nullable: true }) }); // merged-away sessions arrive as null
  items
    .mapValues((v) => v.sku, { value: stringSerde })
    .groupByKey()
    .windowedBy(SessionWindows.withInactivityGap(10).grace(50))
    .reduce((a, b) => (b > a ? a : b), { name: 'first-sku' });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, { sku: string }>('items');
  input.pipe('u', { sku: 'x' }, { timestamp: 0 });
  input.pipe('u', { sku: 'y' }, { timestamp: 20 });
  input.pipe('u', { sku: 'z' }, { timestamp: 10 }); // 10 from both: bridges them
  assert.deepEqual(driver.store<Windowed<string>, string[]>('cart').entries(), [[{ key: 'u', start: 0, end: 20 }, ['x', 'y', 'z']]]);
  assert.deepEqual(driver.store<Windowed<string>, string>('first-sku').entries(), [[{ key: 'u', start: 0, end: 20 }, 'x']]);
});

test('a session gap must be positive', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey().windowedBy(SessionWindows.withInactivityGap(0)).count();
  assert.throws(() => compile(app), { code: 'INVALID_WINDOW' });
});
