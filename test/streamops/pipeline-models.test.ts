import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionsTopology } from '../../topology/sessions.ts';
import { heartbeatsTopology } from '../../topology/heartbeats.ts';
import { heartbeatsModel } from '../../src/verify/heartbeats-pipeline.ts';
import { sessionsInput, sessionsModel } from '../../src/verify/sessions-pipeline.ts';
import { lastByKey, recordId } from '../../src/verify/verify.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

test('the session model agrees with the session topology run in the test driver, late clicks and poison included', () => {
  const driver = new TopologyTestDriver(sessionsTopology(), { partitions: 3 });
  const input = driver.input<string, unknown>('clicks');
  const records = sessionsInput({ records: 3000, seed: 3, poison: 3 });
  for (const r of records) input.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const inputs = driver.records('clicks');
  const model = sessionsModel();
  const outputs = driver.records('user-sessions');
  const got = lastByKey(outputs, model.readOutput!);
  const want = model.expectedFinal!(inputs);
  assert.ok(want.size > 100, `${want.size} sessions`);
  assert.ok([...want.values()].filter((v) => v === 'null').length > 50, 'sessions merged');
  assert.deepEqual(got, want);
  assert.ok(driver.metrics().lateRecordsDropped > 10, `${driver.metrics().lateRecordsDropped} late clicks`);
  // every click that counts produced an output standing for it; the poison went to the dead-letter topic
  assert.equal(model.expectedProducers(inputs).size, inputs.length - driver.metrics().lateRecordsDropped);
  assert.deepEqual(new Set(driver.deadLetters().map((d) => recordId(d.source))).size, 3);
});

test('the heartbeats model agrees with the heartbeats topology run in the test driver; wall-clock heartbeats read 1, 2, 3, ...', () => {
  const driver = new TopologyTestDriver(heartbeatsTopology(), { partitions: 3, wallClockStartMs: 0 });
  const input = driver.input<string, unknown>('clicks');
  const records = sessionsInput({ records: 2000, seed: 5, poison: 2 });
  records.forEach((r, i) => {
    input.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
    if (i % 100 === 0) driver.advanceWallClockTime(300);
  });
  const model = heartbeatsModel();
  const outputs = driver.records('click-heartbeats');
  const want = model.expectedFinal!(driver.records('clicks'));
  assert.ok([...want.keys()].filter((k) => k.startsWith('tick-')).length === 3);
  assert.deepEqual(lastByKey(outputs, model.readOutput!), want);
  assert.deepEqual(model.checkOutputs!(outputs), []);
  assert.ok(outputs.filter((r) => r.key?.toString().startsWith('beat-')).length >= 3 * 19);
});
