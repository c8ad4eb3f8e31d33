import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { testCluster } from '../support/cluster.ts';

const base = { records: 20_000, replicas: 3, kills: 5, poison: 4, seed: 5, feedMs: 15_000 } as const;

test('exactly_once survives 5 SIGKILLs of 3 replicas: no duplicate, no loss, exact totals, poison dead-lettered once', async () => {
  const result = await runChaos({ ...base, bootstrap: testCluster().bootstrap, guarantee: 'exactly_once' });
  console.log(`# chaos exactly_once: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches, dlqRecords: result.dlqRecords },
    { duplicates: 0, lost: 0, aggregateMismatches: 0, dlqRecords: base.poison },
    JSON.stringify(result.verify.examples),
  );
  assert.equal(result.records, base.records + base.poison);
  assert.ok(result.verify.aggregateKeys > 0, 'customer totals were compared');
});

test('a worker that commits offsets outside the transaction is caught by the verifier', async () => {
  // Each restarted replica dies right after the (misplaced) offset commit and before its transaction
  // commits: the outputs abort while the offsets have already moved on.
  const result = await runChaos({ ...base, kills: 3, poison: 0, seed: 9, bootstrap: testCluster().bootstrap, guarantee: 'exactly_once', brokenWorker: true, phase: 'after-send-offsets' });
  console.log(`# chaos broken worker: lost ${result.lost}, mismatches ${result.aggregateMismatches}, duplicates ${result.duplicates}`);
  assert.equal(result.verify.ok, false, 'the verifier reports a violation');
  assert.ok(result.lost + result.aggregateMismatches > 0);
});

test('registry Avro input: 2 SIGKILLs of 2 replicas leave the exact totals; malformed bytes are dead-lettered once', async () => {
  const { bootstrap, registryUrl } = testCluster();
  const result = await runChaos({ records: 4_000, replicas: 2, kills: 2, poison: 3, seed: 11, feedMs: 8_000, bootstrap, registryUrl, format: 'avro' });
  console.log(`# chaos exactly_once avro: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.equal(result.format, 'avro');
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches, dlqRecords: result.dlqRecords },
    { duplicates: 0, lost: 0, aggregateMismatches: 0, dlqRecords: 3 },
    JSON.stringify(result.verify.examples),
  );
  assert.ok(result.verify.aggregateKeys > 0, 'customer totals were compared');
});

test('word-count (a repartition by word) survives 4 SIGKILLs of 3 replicas: every count equals the recount from the input', async () => {
  const result = await runChaos({ records: 3_000, replicas: 3, kills: 4, poison: 0, seed: 13, feedMs: 10_000, bootstrap: testCluster().bootstrap, pipeline: 'word-count' });
  console.log(`# chaos exactly_once word-count: ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches },
    { duplicates: 0, lost: 0, aggregateMismatches: 0 },
    JSON.stringify(result.verify.examples),
  );
  assert.ok(result.verify.aggregateKeys > 0, 'counts were compared');
});
