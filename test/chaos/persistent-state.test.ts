import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { testCluster } from '../support/cluster.ts';

test('persistent stores with running checkpoints: 3 SIGKILLs of 2 replicas, each resuming from its local stores, leave exact totals, no duplicate, no loss', async () => {
  const result = await runChaos({ records: 4_000, replicas: 2, kills: 3, poison: 2, seed: 23, feedMs: 8_000, bootstrap: testCluster().bootstrap, stateStore: 'persistent' });
  console.log(`# chaos exactly_once orders, persistent stores: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches },
    { duplicates: 0, lost: 0, aggregateMismatches: 0 },
    JSON.stringify(result.verify.examples),
  );
  assert.equal(result.stateStore, 'persistent');
  assert.equal(result.dlqRecords, 2);
  assert.ok(result.verify.aggregateKeys > 0, 'customer totals were compared');
});
