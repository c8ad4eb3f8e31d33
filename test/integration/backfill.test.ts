import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { describeTopicConfigs } from '../../src/kafka/topic-configs.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { eventually } from '../../src/verify/worker-process.ts';
import { createTopics, uniqueName } from '../support/cluster.ts';
import { DAY_MS, SumRun } from '../support/sum-run.ts';

const runs: SumRun[] = [];
after(() => Promise.all(runs.map((r) => r.stop())));

/**
 * Waits until the broker has run its time-retention check since now: a topic with the broker's
 * default retention (7 days) gets a record stamped 30 days ago, and the check deletes it.
 */
async function retentionCheckRan(run: SumRun): Promise<void> {
  const witness = uniqueName('retention-witness');
  await createTopics(run.bootstrap, [{ name: witness, partitions: 1 }]);
  await produceAll(run.bootstrap, witness, [{ key: 'w', value: 'old' }], {}, 30 * DAY_MS);
  await eventually(async () => (await run.watermarks(witness))[0]!.low === 1, 120_000, 'the broker deleting a 30-day-old record of a 7-day topic');
}

test('a backfill of 30-day-old records through a repartition topic, its worker SIGKILLed after 3 commits and restarted after the broker checked retention, ends with every sum exact', async () => {
  const run = new SumRun(6);
  runs.push(run);
  await run.createTopics();
  await run.produce(20_000, 50, 37, 30 * DAY_MS);
  // Small transactions: the kill lands while the repartition topic holds records the group has not read.
  const first = run.startWorker('a', { ONCEFLOW_MAX_RECORDS_PER_TRANSACTION: '500' });
  await first.waitFor(() => first.count('committed') >= 3, 120_000, 'three commits');
  first.kill('SIGKILL');
  await first.exit();

  const { repartition } = await run.internalTopics();
  const configs = (await describeTopicConfigs(run.bootstrap, [repartition], ['retention.ms', 'retention.bytes', 'cleanup.policy'])).get(repartition)!;
  assert.deepEqual(Object.fromEntries(configs), { 'retention.ms': '-1', 'retention.bytes': '-1', 'cleanup.policy': 'delete' });
  const beforeCheck = await run.watermarks(repartition);
  await retentionCheckRan(run);
  const afterCheck = await run.watermarks(repartition);
  // What the issue lost: records of the repartition topic deleted by time before the group read them.
  assert.deepEqual(afterCheck.map((p) => p.low), beforeCheck.map(() => 0), 'no repartition record was deleted by the retention check');
  console.log(`# at the kill the repartition topic held ${beforeCheck.reduce((n, p) => n + p.high, 0)} offsets; the retention check deleted none`);

  run.startWorker('a');
  await run.caughtUp();
  const want = run.expectedSums();
  const got = await run.outputSums();
  assert.equal(got.size, want.size);
  for (const [key, sum] of want) assert.equal(got.get(key), sum, `sum of ${key}`);
  console.log(`# ${want.size} keys, ${[...want.values()].reduce((a, b) => a + b, 0)} in total, every sum exact`);
});

test('existing internal topics with unsafe configs (a 7-day repartition topic, a changelog without compaction, a CreateTime dead-letter topic) are corrected at start, each correction logged, and a backfill through them is exact', async () => {
  const run = new SumRun(4);
  runs.push(run);
  await run.createTopics();
  const { repartition, changelog, deadLetter } = await run.internalTopics();
  // As an earlier version (or a person) left them.
  await createTopics(run.bootstrap, [
    { name: repartition, partitions: 4, config: { 'retention.ms': String(7 * DAY_MS) } },
    { name: changelog, partitions: 4, config: { 'cleanup.policy': 'delete' } },
    { name: deadLetter, partitions: 4 },
  ]);
  const worker = run.startWorker('a');
  await worker.waitFor((e) => e.type === 'started', 120_000, 'the start');
  const corrected = worker.events.filter((e) => e.type === 'topic-config-corrected').map((e) => `${String(e.topic)} ${String(e.setting)}: ${String(e.from)} -> ${String(e.to)}`);
  assert.deepEqual(corrected.sort(), [
    `${changelog} cleanup.policy: delete -> compact`,
    `${deadLetter} message.timestamp.type: CreateTime -> LogAppendTime`,
    `${repartition} retention.ms: ${7 * DAY_MS} -> -1`,
  ].sort());
  const now = await describeTopicConfigs(run.bootstrap, [repartition, changelog, deadLetter], ['retention.ms', 'cleanup.policy', 'message.timestamp.type']);
  assert.equal(now.get(repartition)!.get('retention.ms'), '-1');
  assert.equal(now.get(changelog)!.get('cleanup.policy'), 'compact');
  assert.equal(now.get(deadLetter)!.get('message.timestamp.type'), 'LogAppendTime');

  await run.produce(4_000, 20, 5, 30 * DAY_MS);
  await retentionCheckRan(run);
  await run.caughtUp();
  assert.deepEqual(await run.outputSums(), run.expectedSums());
});
