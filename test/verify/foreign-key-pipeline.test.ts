import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { lastByKey } from '../../src/verify/verify.ts';
import { orderCustomerEventsTopology } from '../../topology/order-customer-events.ts';

test("the chaos harness's foreign-key model and the topology agree on every order's final result (3 partitions, poison records dead-lettered)", () => {
  const pipeline = pipelines['foreign-key'];
  const driver = new TopologyTestDriver(orderCustomerEventsTopology({ input: 'events', output: 'results' }), { partitions: 3 });
  const input = pipeline.input({ records: 4_000, seed: 7, poison: 5 });
  const events = driver.input<string, unknown>('events');
  for (const r of input) events.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const logged = driver.records('events').map((r) => ({ ...r, headers: [...r.headers] }));
  const expected = pipeline.model.expectedFinal!(logged);
  const results = driver.records('results').map((r) => ({ ...r, headers: [...r.headers] }));
  const actual = lastByKey(results, pipeline.model.readOutput!);
  assert.deepEqual(Object.fromEntries([...actual].sort()), Object.fromEntries([...expected].sort()));
  const values = [...expected.values()];
  assert.ok(values.some((v) => v === 'null'), 'some orders end deleted');
  assert.ok(values.some((v) => v.includes('"customer":null')), 'some orders end without a customer');
  assert.ok(values.some((v) => v.includes('"tier":"gold"')), 'some orders end joined');
  assert.equal(driver.deadLetters().length, 5);
});
