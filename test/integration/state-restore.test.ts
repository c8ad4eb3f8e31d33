import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const workers: WorkerProcess[] = [];
after(() => Promise.all(workers.map((w) => w.stop())));

test('a restarted worker restores a store of 100,000 keys and continues from the exact committed state', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('count-in'), output: uniqueName('count-out'), appId: uniqueName('count') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 2 }, { name: names.output, partitions: 2 }]);
  const keys = 100_000;
  await produceAll(bootstrap, names.input, Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, value: 'x' })));
  const start = (instance: string) => {
    const w = new WorkerProcess(instance, 'test/fixtures/count-by-key.ts', ['--app-id', names.appId, '--instance-id', instance], {
      ONCEFLOW_BOOTSTRAP: bootstrap,
      COUNT_INPUT: names.input,
      COUNT_OUTPUT: names.output,
    });
    workers.push(w);
    return w;
  };
  const first = start('a');
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs: 240_000 });
  // SIGKILL, not a clean stop: the restart must rebuild the store from the changelog alone.
  first.kill('SIGKILL');
  await first.exit();

  const second = start('a');
  const restored = await second.waitFor((e) => e.type === 'restored', 240_000, 'the restore');
  assert.ok(Number(restored.records) >= keys, `restored ${restored.records} changelog records`);
  await produceAll(bootstrap, names.input, [{ key: 'k7', value: 'x' }, { key: 'k99999', value: 'x' }, { key: 'new', value: 'x' }]);
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs: 120_000 });
  const last = new Map<string, number>();
  for (const r of (await readTopic(bootstrap, names.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
  assert.equal(last.size, keys + 1);
  assert.deepEqual([last.get('k7'), last.get('k99999'), last.get('new'), last.get('k5')], [2, 2, 1, 1]);
  console.log(`# restored ${restored.records} changelog records in ${restored.ms} ms`);
});
