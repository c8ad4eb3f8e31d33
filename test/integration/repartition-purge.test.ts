import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { GroupOffsets } from '../../src/kafka/group-offsets.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { kafkaClients } from '../../src/runtime/base/client-supplier.ts';
import { parseWorkerConfig } from '../../src/runtime/base/config.ts';
import { partitionKey } from '../../src/runtime/base/partition-progress.ts';
import { RepartitionPurge } from '../../src/runtime/transaction/repartition-purge.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { eventually } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { DAY_MS, SumRun } from '../support/sum-run.ts';

const runs: SumRun[] = [];
after(() => Promise.all(runs.map((r) => r.stop())));

test('the purge, through the real client, deletes exactly the records below the committed offset and leaves every record from it on', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('purge-direct');
  await createTopics(bootstrap, [{ name: topic, partitions: 2 }]);
  const records = (partition: number, n: number) => Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`), partition }));
  await produceRecords(bootstrap, topic, [...records(0, 100), ...records(1, 50)]);
  let now = 0;
  const events: WorkerEvent[] = [];
  const config = { ...parseWorkerConfig({ bootstrap, appId: 'purge-direct', repartitionPurgeIntervalMs: 1_000 }), instanceId: 'a' };
  const purge = new RepartitionPurge({ config, clients: kafkaClients, emit: (e) => events.push(e) }, new Set([topic]), () => true, () => now);
  now += 1_000;
  purge.afterCommit(new Map([[partitionKey(topic, 0), 40], [partitionKey(topic, 1), undefined]]));
  await purge.close();
  assert.deepEqual(events, [{ type: 'repartition-purged', partitions: 1 }]);
  const left = await readTopic(bootstrap, topic);
  assert.deepEqual(left.filter((r) => r.partition === 0).map((r) => r.offset), Array.from({ length: 60 }, (_, i) => 40 + i));
  assert.equal(left.filter((r) => r.partition === 1).length, 50);
});

test('while a worker runs a backfill, its purge trims each repartition partition and never above the offset its group committed; the sums stay exact', async () => {
  const run = new SumRun(3);
  runs.push(run);
  await run.createTopics();
  const { repartition } = await run.internalTopics();
  run.startWorker('a', { ONCEFLOW_REPARTITION_PURGE_INTERVAL_MS: '300', ONCEFLOW_MAX_RECORDS_PER_TRANSACTION: '1000' });
  const group = new GroupOffsets(run.bootstrap, run.appId);
  const samples: string[] = [];
  let trimmed = false;
  try {
    for (let slice = 0; slice < 60 && !trimmed; slice++) {
      await run.produce(1_000, 40, 100 + slice, 30 * DAY_MS);
      // Low watermark first, then the committed offset: a committed offset only grows, so low <= committed must hold of any pair read in this order.
      const marks = await run.watermarks(repartition).catch(() => []);
      if (marks.length === 0) continue;
      const committed = await group.fetch(marks.map((m) => ({ topic: repartition, partition: m.partition })));
      for (const m of marks) {
        const c = committed.find((o) => o.partition === m.partition)?.offset ?? -1;
        samples.push(`${m.partition}: low ${m.low} committed ${c} high ${m.high}`);
        assert.ok(m.low === 0 || m.low <= c, `partition ${m.partition} purged to ${m.low}, above the committed offset ${c}`);
      }
      trimmed = marks.every((m) => m.low > 0);
    }
  } finally {
    await group.close();
  }
  assert.ok(trimmed, `every repartition partition was trimmed while the run went on; last samples: ${samples.slice(-3).join('; ')}`);
  await run.caughtUp();
  assert.deepEqual(await run.outputSums(), run.expectedSums());
  const marks = await run.watermarks(repartition);
  console.log(`# ${run.produced.length} records; repartition offsets written ${marks.reduce((n, m) => n + m.high, 0)}, purged ${marks.reduce((n, m) => n + m.low, 0)}; ${samples.length} samples, none above the committed offset`);
  await eventually(async () => (await run.watermarks(repartition)).every((m) => m.low > 0), 10_000, 'the trimmed partitions staying trimmed');
});
