import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { lastByKey, recordId } from '../../src/verify/verify.ts';
import { clickBurstsTopology } from '../../topology/click-bursts.ts';

test("the chaos harness's sliding-window model and topology/click-bursts.ts agree on the last count of every window (3 partitions, out-of-order clicks, poison dead-lettered)", () => {
  const pipeline = pipelines.sliding;
  const driver = new TopologyTestDriver(clickBurstsTopology({ input: 'clicks', output: 'bursts' }), { partitions: 3 });
  const clicks = driver.input<string, unknown>('clicks');
  for (const r of pipeline.input({ records: 3_000, seed: 11, poison: 3, startAt: 1_000_000 })) clicks.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const inputs = driver.records('clicks');
  const want = pipeline.model.expectedFinal!(inputs);
  assert.ok(want.size > 1_000, `${want.size} windows`);
  assert.ok([...want.values()].some((n) => Number(n) > 2), 'some windows hold several clicks');
  assert.deepEqual(lastByKey(driver.records('bursts'), pipeline.model.readOutput!), want);
  // no click is late in this feed (at most 40 ms out of order, grace 50): every one produced output; the poison was dead-lettered
  assert.equal(driver.metrics().lateRecordsDropped, 0);
  assert.equal(pipeline.model.expectedProducers(inputs).size, inputs.length);
  assert.deepEqual(new Set(driver.deadLetters().map((d) => recordId(d.source))).size, 3);
});
