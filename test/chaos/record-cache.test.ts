import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { pipelines } from '../../src/verify/pipelines.ts';
import { testCluster } from '../support/cluster.ts';

const exact = (result: Awaited<ReturnType<typeof runChaos>>) =>
  assert.deepEqual(
    { duplicates: result.duplicates, lost: result.lost, aggregateMismatches: result.aggregateMismatches },
    { duplicates: 0, lost: 0, aggregateMismatches: 0 },
    JSON.stringify(result.verify.examples),
  );

test('word-count with the record cache on survives 4 SIGKILLs of 3 replicas: every count equals the recount, with fewer outputs than updates', async () => {
  const opts = { records: 3_000, replicas: 3, kills: 4, poison: 0, seed: 17, feedMs: 10_000 } as const;
  const result = await runChaos({ ...opts, bootstrap: testCluster().bootstrap, pipeline: 'word-count', cacheMaxRecords: 10_000 });
  console.log(`# chaos exactly_once word-count, cache on: ${JSON.stringify({ ...result, verify: undefined })}`);
  exact(result);
  assert.ok(result.verify.aggregateKeys > 0, 'counts were compared');
  // Committed records: one repartition record per word, then the counts. Without the cache there is a
  // count per word too; with it, at most one per word and transaction.
  const words = pipelines['word-count'].input(opts).reduce((n, r) => n + r.value.split(' ').length, 0);
  const counts = result.verify.outputRecords - words;
  assert.ok(counts > 0 && counts < words, `${counts} counts for ${words} words`);
});

test('orders with a record cache of 3 keys (so results also leave on overflow) survive 2 SIGKILLs of 2 replicas with exact totals', async () => {
  const result = await runChaos({ records: 4_000, replicas: 2, kills: 2, poison: 2, seed: 19, feedMs: 8_000, bootstrap: testCluster().bootstrap, cacheMaxRecords: 3 });
  console.log(`# chaos exactly_once orders, cache of 3: ${JSON.stringify({ ...result, verify: undefined })}`);
  exact(result);
  assert.equal(result.dlqRecords, 2);
  assert.ok(result.verify.aggregateKeys > 0, 'customer totals were compared');
});
