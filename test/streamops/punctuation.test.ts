import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { countSerde } from '../../src/state/internal-serdes.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { compile } from '../../src/graph/compile.ts';

/** Remembers when each key was last seen; a punctuation forgets (and reports) keys idle for `ttl`. */
function expiring(on: 'stream-time' | 'wall-clock', everyMs: number, ttl: number) {
  const app = new TopologyBuilder({ appId: 'presence' });
  app
    .stream('pings', { key: stringSerde, value: stringSerde })
    .process<string, string, string, number>({
      name: 'presence',
      state: { key: stringSerde, value: countSerde },
      process: (key, _value, ctx) => ctx.store.put(key ?? '', ctx.timestamp),
      punctuate: [
        {
          on,
          everyMs,
          run: (time, ctx) => {
            for (const [key, seen] of ctx.store.entries()) {
              if (seen + ttl > time) continue;
              ctx.store.delete(key);
              ctx.forward(key, `expired at ${time}`);
            }
          },
        },
      ],
      key: stringSerde,
      value: stringSerde,
    })
    .to('expired');
  return app;
}

test('a stream-time punctuation runs when stream time crosses each multiple of its interval, inside the record that moved it', () => {
  const driver = new TopologyTestDriver(expiring('stream-time', 100, 150));
  const pings = driver.input<string, string>('pings');
  const out = driver.output<string, string>('expired');
  pings.pipe('a', 'x', { timestamp: 10 });
  pings.pipe('b', 'x', { timestamp: 90 });
  assert.deepEqual(out.readKeyValues(), []);
  pings.pipe('b', 'x', { timestamp: 120 }); // crosses 100: a (seen 10) is not yet 150 old
  assert.deepEqual(out.readKeyValues(), []);
  pings.pipe('c', 'x', { timestamp: 210 }); // crosses 200: a is 190 old
  assert.deepEqual(out.readKeyValues(), [['a', 'expired at 200']]);
  pings.pipe('c', 'x', { timestamp: 250 }); // no boundary crossed
  pings.pipe('c', 'x', { timestamp: 190 }); // out of order: stream time stays 250
  assert.deepEqual(out.readKeyValues(), []);
  driver.advanceStreamTime(500); // 250 -> 750: crosses 300..700, runs once, at 700
  assert.deepEqual(out.readKeyValues().sort(), [['b', 'expired at 700'], ['c', 'expired at 700']]);
  assert.deepEqual(driver.store('presence').entries(), []);
  // its store writes went to the changelog in the same transactions
  assert.equal(driver.records('presence-presence-changelog').filter((r) => r.value === null).length, 3);
});

test('a wall-clock punctuation runs when the wall clock crosses its interval, with no record needed', () => {
  const driver = new TopologyTestDriver(expiring('wall-clock', 1000, 0), { wallClockStartMs: 10_500 });
  const pings = driver.input<string, string>('pings');
  const out = driver.output<string, string>('expired');
  pings.pipe('a', 'x', { timestamp: 5 });
  driver.advanceWallClockTime(400); // 10 900: no boundary
  assert.deepEqual(out.readKeyValues(), []);
  driver.advanceWallClockTime(200); // 11 100: crosses 11 000
  assert.deepEqual(out.readKeyValues(), [['a', 'expired at 11000']]);
  driver.advanceWallClockTime(5000); // several boundaries: runs once
  assert.deepEqual(out.readKeyValues(), []);
});

test('an aborted transaction takes the punctuation back with it: it runs again', () => {
  const driver = new TopologyTestDriver(expiring('wall-clock', 1000, 0), { wallClockStartMs: 0, autoCommit: false });
  const pings = driver.input<string, string>('pings');
  const out = driver.output<string, string>('expired');
  pings.pipe('a', 'x', { timestamp: 5 });
  driver.commit();
  driver.advanceWallClockTime(1000);
  driver.abort();
  assert.deepEqual(out.readKeyValues(), []);
  assert.deepEqual(driver.store('presence').entries(), [['a', 5]]);
  driver.advanceWallClockTime(1);
  driver.commit();
  assert.deepEqual(out.readKeyValues(), [['a', 'expired at 1000']]);
});

test('a punctuation that throws dead-letters its trigger and undoes its writes', () => {
  const app = new TopologyBuilder({ appId: 'p' });
  app
    .stream('pings', { key: stringSerde, value: stringSerde })
    .process<string | null, string | null>({
      name: 'boom',
      process: (k, v, ctx) => ctx.forward(k, v),
      punctuate: [{ on: 'stream-time', everyMs: 10, run: () => { throw new Error('punctuation broke'); } }],
      key: stringSerde,
      value: stringSerde,
    })
    .to('out');
  const driver = new TopologyTestDriver(app);
  const pings = driver.input<string, string>('pings');
  pings.pipe('a', 'x', { timestamp: 1 });
  pings.pipe('a', 'y', { timestamp: 11 });
  assert.deepEqual(driver.output<string, string>('out').readValues(), ['x']);
  assert.deepEqual(driver.deadLetters().map((d) => [d.code, d.stage, d.message]), [['PUNCTUATION_FAILED', 'boom', 'punctuation broke']]);
});

test('punctuation intervals must be positive', () => {
  const app = new TopologyBuilder({ appId: 'p' });
  app.stream('pings', { key: stringSerde, value: stringSerde }).process({ punctuate: [{ on: 'wall-clock', everyMs: 0, run: () => undefined }] });
  assert.throws(() => compile(app), { code: 'INVALID_STAGE_OPTION' });
});
