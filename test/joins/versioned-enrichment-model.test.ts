import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { enrichmentEventsTopology } from '../../topology/enrichment-events.ts';
import { enrichmentVersionedTopology } from '../../topology/enrichment-versioned.ts';

function totals(driver: TopologyTestDriver): Record<string, string> {
  return Object.fromEntries(driver.store<string, number>('segment-totals').entries().map(([k, v]) => [k, String(v)]).sort());
}

test("the chaos harness's versioned enrichment model and the topology agree on every segment total (3 partitions, out-of-order and late events, orders waiting out a grace period, poison dead-lettered)", () => {
  const pipeline = pipelines['enrichment-versioned'];
  const driver = new TopologyTestDriver(enrichmentVersionedTopology({ input: 'events', output: 'totals' }), { partitions: 3 });
  const input = pipeline.input({ records: 4_000, seed: 11, poison: 5, startAt: 1_000_000 });
  const events = driver.input<string, unknown>('events');
  for (const r of input) events.pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  const logged = driver.records('events').map((r) => ({ ...r, headers: [...r.headers] }));
  const expected = pipeline.model.expectedFinal!(logged);
  assert.ok(expected.size >= 3, 'the input reaches several segments');
  assert.deepEqual(totals(driver), Object.fromEntries([...expected].sort()));
  assert.equal(driver.deadLetters().length, 5);
  assert.ok(driver.metrics().lateRecordsDropped > 0, 'some customer updates are behind the retention');

  // The same events through the non-versioned table (which joins the row last arrived) total otherwise:
  // the input does exercise the version lookup.
  const latest = new TopologyTestDriver(enrichmentEventsTopology({ input: 'events', output: 'totals' }), { partitions: 3 });
  for (const r of input) latest.input<string, unknown>('events').pipeRaw(Buffer.from(r.key), Buffer.from(r.value));
  assert.notDeepEqual(totals(latest), totals(driver));
});
