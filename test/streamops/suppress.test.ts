import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { SessionWindows } from '../../src/dsl/session-windows.ts';
import { Suppressed, type SuppressSpec } from '../../src/dsl/suppress.ts';
import { hoppingWindow, tumblingWindow } from '../../src/dsl/windows.ts';
import type { Windowed, WindowSpec } from '../../src/dsl/types.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { compile } from '../../src/graph/compile.ts';

function suppressedCounts(window: WindowSpec | SessionWindows, suppressed: SuppressSpec = Suppressed.untilWindowCloses()) {
  const app = new TopologyBuilder({ appId: 'clicks' });
  const grouped = app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey();
  const counts = window instanceof SessionWindows ? grouped.windowedBy(window).count({ name: 'counts' }) : grouped.windowedBy(window).count({ name: 'counts' });
  counts.suppress(suppressed, { name: 'final' }).toStream().to('final-counts');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('clicks');
  const output = driver.output<Windowed<string>, number>('final-counts');
  const at = (key: string, timestamp: number) => input.pipe(key, 'x', { timestamp });
  const read = () => output.readKeyValues().map(([k, v]) => `${k.key}@${k.start}-${k.end}=${v}`);
  return { driver, at, read };
}

test('untilWindowCloses on tumbling windows: nothing before the window closes, then its final count once', () => {
  const { driver, at, read } = suppressedCounts(tumblingWindow(10, { graceMs: 5 }));
  at('a', 1);
  at('a', 2);
  at('b', 9);
  at('a', 12);
  at('a', 14); // stream time 14: [0,10) closes at 15
  assert.deepEqual(read(), []);
  at('a', 3); // within grace: still counted in the final result
  at('c', 15);
  assert.deepEqual(read().sort(), ['a@0-10=3', 'b@0-10=1']);
  at('c', 16);
  assert.deepEqual(read(), []);
  // the buffer is a store with a changelog: what it held back is deleted once emitted
  const log = driver.records('clicks-final-changelog');
  assert.equal(log.filter((r) => r.value === null).length, 2);
});

test('untilWindowCloses on hopping windows emits each window once', () => {
  const { at, read } = suppressedCounts(hoppingWindow(10, 5));
  at('a', 7); // [0,10) and [5,15)
  at('a', 9);
  assert.deepEqual(read(), []);
  at('a', 10); // [0,10) closes
  assert.deepEqual(read(), ['a@0-10=2']);
  at('a', 20); // [5,15) and [10,20) close
  assert.deepEqual(read(), ['a@5-15=3', 'a@10-20=1']);
});

test('untilWindowCloses on session windows: only the final session, never the merged-away ones or their deletes', () => {
  const { driver, at, read } = suppressedCounts(SessionWindows.withInactivityGap(15).grace(20));
  at('a', 0);
  at('a', 30);
  at('a', 15); // bridges [0,0] and [30,30] into [0,30]
  assert.deepEqual(read(), []);
  driver.advanceStreamTime(100);
  assert.deepEqual(read(), ['a@0-30=3']);
});

test('untilTimeLimit emits at most one update per key per limit: the latest', () => {
  const app = new TopologyBuilder({ appId: 'rates' });
  app
    .stream('clicks', { key: stringSerde, value: stringSerde })
    .groupByKey()
    .count({ name: 'totals' })
    .suppress(Suppressed.untilTimeLimit(100))
    .toStream()
    .to('totals-out');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('clicks');
  const output = driver.output<string, number>('totals-out');
  input.pipe('a', 'x', { timestamp: 0 });
  input.pipe('a', 'x', { timestamp: 50 });
  input.pipe('b', 'x', { timestamp: 60 });
  input.pipe('a', 'x', { timestamp: 99 });
  assert.deepEqual(output.readKeyValues(), []);
  input.pipe('c', 'x', { timestamp: 100 }); // a's first update was at 0: due
  assert.deepEqual(output.readKeyValues(), [['a', 3]]);
  input.pipe('a', 'x', { timestamp: 120 }); // held until 220
  input.pipe('c', 'x', { timestamp: 220 }); // b (due 160), a (220), c (200) go
  assert.deepEqual(output.readKeyValues().sort(), [['a', 4], ['b', 1], ['c', 1]]);
});

test('a full buffer fails the record that would overflow it with a typed error, its updates undone', () => {
  const { driver, at, read } = suppressedCounts(tumblingWindow(10), Suppressed.untilWindowCloses({ maxRecords: 2 }));
  at('a', 1);
  at('b', 1);
  at('c', 1); // a third key: over the bound
  at('a', 2); // a key already held: fine
  assert.deepEqual(driver.deadLetters().map((d) => [d.code, d.stage, d.source.offset]), [['SUPPRESSION_BUFFER_FULL', 'final', 2]]);
  assert.equal(driver.store<Windowed<string>, number>('counts').get({ key: 'c', start: 0, end: 10 }), undefined);
  driver.advanceStreamTime(20);
  assert.deepEqual(read().sort(), ['a@0-10=2', 'b@0-10=1']);
});

test("whenFull: 'emit-early' makes room by emitting the result due first", () => {
  const { driver, at, read } = suppressedCounts(tumblingWindow(10), Suppressed.untilWindowCloses({ maxRecords: 1, whenFull: 'emit-early' }));
  at('a', 1);
  at('b', 2);
  assert.deepEqual(read(), ['a@0-10=1']);
  driver.advanceStreamTime(20);
  assert.deepEqual(read(), ['b@0-10=1']);
});

test('untilWindowCloses needs a windowed aggregate upstream', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  app.stream('clicks', { key: stringSerde, value: stringSerde }).groupByKey().count().suppress(Suppressed.untilWindowCloses());
  assert.throws(() => compile(app), { code: 'INVALID_STAGE_OPTION' });
});
