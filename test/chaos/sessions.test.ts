import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { testCluster } from '../support/cluster.ts';

test('session windows survive 3 SIGKILLs of 2 replicas: exact sessions (merges and deletes included), no duplicate, no loss, poison dead-lettered once', async () => {
  const result = await runChaos({ records: 3_000, replicas: 2, kills: 3, poison: 2, seed: 17, feedMs: 8_000, bootstrap: testCluster().bootstrap, pipeline: 'sessions' });
  console.log(`# chaos exactly_once sessions: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches, dlqRecords: result.dlqRecords },
    { duplicates: 0, lost: 0, aggregateMismatches: 0, dlqRecords: 2 },
    JSON.stringify(result.verify.examples),
  );
  assert.ok(result.verify.aggregateKeys > 100, `${result.verify.aggregateKeys} sessions compared`);
});
