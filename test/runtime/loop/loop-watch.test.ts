import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoopWatch, type LoopStall } from '../../../src/runtime/loop/loop-watch.ts';

test('a step that outlasts the threshold is reported once, by name, and again only after the loop moved on', () => {
  const reported: LoopStall[] = [];
  const watch = new LoopWatch(30_000, (stall) => reported.push(stall));
  const start = Date.now();
  watch.enter('consume');
  assert.equal(watch.check(start + 29_000), undefined, 'not yet past the threshold');
  assert.equal(watch.check(start + 31_000)?.step, 'consume');
  assert.equal(watch.check(start + 90_000), undefined, 'the same stall is not reported twice');
  watch.enter('commit');
  const commitStart = Date.now();
  assert.equal(watch.check(commitStart + 1_000), undefined, 'a new step starts its own clock');
  assert.equal(watch.check(commitStart + 45_000)?.step, 'commit');
  assert.deepEqual(
    reported.map((r) => r.step),
    ['consume', 'commit'],
  );
  assert.ok(reported[1]!.forMs >= 45_000);
});
