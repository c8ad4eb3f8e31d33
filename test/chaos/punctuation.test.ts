import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { testCluster } from '../support/cluster.ts';

test('punctuation survives 3 SIGKILLs of 2 replicas: exact stream-time ticks and counts, wall-clock heartbeats 1, 2, 3, ... per partition, no duplicate, no loss', async () => {
  const result = await runChaos({ records: 2_000, replicas: 2, kills: 3, poison: 0, seed: 19, feedMs: 8_000, bootstrap: testCluster().bootstrap, pipeline: 'heartbeats' });
  console.log(`# chaos exactly_once heartbeats: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches },
    { duplicates: 0, lost: 0, aggregateMismatches: 0 },
    JSON.stringify(result.verify.examples),
  );
  assert.ok(result.verify.aggregateKeys > 10, `${result.verify.aggregateKeys} keys compared`);
});
