import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { enrichmentEventsTopology } from '../../topology/enrichment-events.ts';

test("the chaos harness's enrichment model and the topology agree on every segment total (3 partitions, poison records dead-lettered)", () => {
  const pipeline = pipelines.enrichment;
  const driver = new TopologyTestDriver(enrichmentEventsTopology({ input: 'events', output: 'totals' }), { partitions: 3 });
  const input = pipeline.input({ records: 3_000, seed: 7, poison: 5 });
  const events = driver.input<string, unknown>('events');
  for (const r of input) events.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const logged = driver.records('events').map((r) => ({ ...r, headers: [...r.headers] }));
  const expected = pipeline.model.expectedFinal!(logged);
  const actual = new Map(driver.store<string, number>('segment-totals').entries().map(([k, v]) => [k, String(v)]));
  assert.ok(expected.size >= 3, 'the input reaches several segments');
  assert.deepEqual(Object.fromEntries([...actual].sort()), Object.fromEntries([...expected].sort()));
  assert.equal(driver.deadLetters().length, 5);
  const joined = [...pipeline.model.expectedProducers(logged)].length - 5;
  const orders = input.filter((r) => r.value.includes('"order"') && !r.value.includes('broken')).length;
  assert.ok(joined > 0 && joined < orders, 'some orders come before their customer and join nothing');
});
