import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const workers: WorkerProcess[] = [];
after(() => Promise.all(workers.map((w) => w.stop())));

test('tasks hosted on processing threads move between processes while their threads hold uncommitted writes: nothing lost, nothing counted twice', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('tr-in'), output: uniqueName('tr-out'), appId: uniqueName('thread-rebalance') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 4 }, { name: names.output, partitions: 4 }]);
  const keys = 200;
  const start = (instance: string) => {
    // A long commit interval: when the group rebalances, each thread holds a transaction's worth of store writes.
    const w = new WorkerProcess(instance, 'test/fixtures/count-by-key.ts', ['--app-id', names.appId, '--instance-id', instance, '--threads', '2', '--commit-interval-ms', '3000', '--cache-max-bytes', '0'], {
      ONCEFLOW_BOOTSTRAP: bootstrap,
      COUNT_INPUT: names.input,
      COUNT_OUTPUT: names.output,
    });
    workers.push(w);
    return w;
  };
  const first = start('a');
  const thread = await first.waitFor((e) => e.type === 'processing-thread', 60_000, 'the processing threads');
  assert.deepEqual(thread.hosted, [0], 'the count is hosted on the threads');
  let produced = 0;
  const feed = async (rounds: number) => {
    for (let r = 0; r < rounds; r++) {
      await produceAll(bootstrap, names.input, Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, value: 'x' })));
      produced++;
    }
  };
  await feed(5);
  await first.waitFor((e) => e.type === 'committed', 60_000, 'a first commit');
  await feed(5);
  // A second process joins while the first holds uncommitted writes: some of its tasks move there.
  const second = start('b');
  await feed(5);
  await second.waitFor((e) => e.type === 'assigned' && Array.isArray(e.partitions) && e.partitions.length > 0, 120_000, 'tasks moved to the second process');
  await feed(5);
  // And leaves again: its tasks come back.
  await second.stop();
  await feed(5);
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], stableMs: 1_500, timeoutMs: 180_000 });
  const last = new Map<string, number>();
  for (const r of (await readTopic(bootstrap, names.output, { isolation: 'read_committed' })).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
  assert.equal(last.size, keys);
  for (const [key, count] of last) assert.equal(count, produced, `count of ${key}`);
});
