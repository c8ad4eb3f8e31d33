import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { describeTopicConfigs } from '../../src/kafka/topic-configs.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { windowedSerde } from '../../src/state/windowed.ts';
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

test('a windowed sum over 12 hours of 30-day-old records, its worker SIGKILLed after 3 commits and restarted after the retention check, ends with every window exact (the window store restored from a changelog time cannot trim)', async () => {
  const HOUR = 3_600_000;
  // One input partition: its records reach the window store in time order, so only the grace closes windows (with
  // several, one partition's records can run hours ahead of another's and make the other's late).
  const run = new SumRun(1, 'test/fixtures/windowed-sum.ts');
  runs.push(run);
  await run.createTopics();
  const from = Math.floor((Date.now() - 30 * DAY_MS) / HOUR) * HOUR;
  const records = Array.from({ length: 6_000 }, (_, i) => ({ key: `e${i}`, value: JSON.stringify({ key: `k${i % 7}`, amount: 1 + (i % 13) }), timestamp: from + i * 7_200 }));
  await run.produceStamped(records);
  const first = run.startWorker('a', { ONCEFLOW_MAX_RECORDS_PER_TRANSACTION: '500' });
  await first.waitFor(() => first.count('committed') >= 3, 120_000, 'three commits');
  first.kill('SIGKILL');
  await first.exit();
  const { changelog } = await run.internalTopics();
  const changelogBefore = await run.watermarks(changelog);
  await retentionCheckRan(run);
  assert.deepEqual((await run.watermarks(changelog)).map((p) => p.low), changelogBefore.map(() => 0), 'no window-store changelog record was deleted by time');

  const second = run.startWorker('a');
  await run.caughtUp();
  const want = new Map<string, number>();
  for (const r of records) {
    const { key, amount } = JSON.parse(r.value) as { key: string; amount: number };
    const window = `${key}@${Math.floor((r.timestamp - from) / HOUR)}`;
    want.set(window, (want.get(window) ?? 0) + amount);
  }
  const keySerde = windowedSerde(stringSerde);
  const got = new Map<string, number>();
  for (const r of (await readTopic(run.bootstrap, run.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const w = keySerde.deserialize(r.key!, { topic: run.output, role: 'key' });
    got.set(`${w.key}@${(w.start - from) / HOUR}`, JSON.parse(r.value!.toString()) as number);
  }
  assert.equal(first.count('late-record') + second.count('late-record'), 0, 'no record was dropped as late');
  assert.equal(want.size, 7 * 12);
  assert.deepEqual(Object.fromEntries([...got].sort()), Object.fromEntries([...want].sort()));
  const restored = second.events.find((e) => e.type === 'restored');
  console.log(`# ${want.size} windows exact; the restart restored ${String(restored?.records)} changelog records`);
});
