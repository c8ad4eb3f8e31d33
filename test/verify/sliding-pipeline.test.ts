import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { clickBurstsTopology } from '../../topology/click-bursts.ts';

test("the chaos harness's sliding-window model and topology/click-bursts.ts agree on the last count of every window (3 partitions, out-of-order clicks, poison dead-lettered)", () => {
  const pipeline = pipelines.sliding;
  const driver = new TopologyTestDriver(clickBurstsTopology({ input: 'clicks', output: 'bursts' }), { partitions: 3 });
  const clicks = driver.input<string, unknown>('clicks');
  for (const r of pipeline.input({ records: 3_000, seed: 11, poison: 3, startAt: 1_000_000 })) clicks.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const logged = driver.records('clicks').map((r) => ({ ...r, headers: [...r.headers] }));
  const expected = pipeline.model.expectedFinal!(logged);
  const actual = new Map<string, string>();
  for (const r of driver.records('bursts')) {
    const output = pipeline.model.readOutput!(r)!;
    actual.set(output.key, output.value);
  }
  assert.ok(expected.size > 1_000, `${expected.size} windows`);
  assert.ok([...expected.values()].some((n) => Number(n) > 2), 'some windows hold several clicks');
  assert.deepEqual(Object.fromEntries([...actual].sort()), Object.fromEntries([...expected].sort()));
  assert.equal(driver.deadLetters().length, 3);
  assert.equal(driver.metrics().lateRecordsDropped, 0);
});
