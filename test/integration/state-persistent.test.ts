import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { readCheckpoint } from '../../src/state/lmdb-store.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const workers: WorkerProcess[] = [];
const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-state-test-'));
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  rmSync(stateDir, { recursive: true, force: true });
});

test('the persistent store restores only the changelog tail after a clean restart, and after a SIGKILL resumes from its last running checkpoint with exact counts', async () => {
  const { bootstrap } = testCluster();
  const names = { input: uniqueName('pcount-in'), output: uniqueName('pcount-out'), appId: uniqueName('pcount') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 2 }, { name: names.output, partitions: 2 }]);
  const keys = 20_000;
  await produceAll(bootstrap, names.input, Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, value: 'x' })));
  const start = () => {
    const w = new WorkerProcess('a', 'test/fixtures/count-by-key.ts', ['--app-id', names.appId, '--instance-id', 'a', '--state-store', 'persistent', '--state-dir', stateDir], {
      ONCEFLOW_BOOTSTRAP: bootstrap,
      COUNT_INPUT: names.input,
      COUNT_OUTPUT: names.output,
      ONCEFLOW_STATE_CHECKPOINT_INTERVAL_MS: '300',
    });
    workers.push(w);
    return w;
  };
  const caughtUp = () => waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs: 120_000 });
  const lastCounts = async () => {
    const last = new Map<string, number>();
    for (const r of (await readTopic(bootstrap, names.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
    return last;
  };

  const first = start();
  const initial = await first.waitFor((e) => e.type === 'restored', 60_000, 'the first restore');
  assert.equal(initial.records, 0);
  await caughtUp();
  assert.equal((await first.stop()).code, 0);
  const checkpoints = ['0_0', '0_1'].map((task) => readCheckpoint(join(stateDir, names.appId, 'a', task)));
  assert.ok(checkpoints.every((c) => c !== undefined && c.size === 1), 'a clean stop checkpoints every task');
  const checkpointed = checkpoints.reduce((sum, c) => sum + [...c!.values()][0]!, 0);
  assert.ok(checkpointed >= keys, `the checkpoints cover the ${keys} changelog records (${checkpointed})`);

  // Clean restart: only what lies past the checkpoint is read back.
  const second = start();
  const resumed = await second.waitFor((e) => e.type === 'restored', 60_000, 'the restore after a clean stop');
  assert.equal(resumed.fromCheckpoint, 2);
  assert.ok(Number(resumed.records) < keys / 100, `restored ${resumed.records} of ${keys} changelog records`);
  await produceAll(bootstrap, names.input, [{ key: 'k7', value: 'x' }, { key: `k${keys - 1}`, value: 'x' }, { key: 'new', value: 'x' }]);
  await caughtUp();
  let last = await lastCounts();
  assert.equal(last.size, keys + 1);
  assert.deepEqual([last.get('k7'), last.get(`k${keys - 1}`), last.get('new'), last.get('k5')], [2, 2, 1, 1]);

  // Rounds of updates while running: the worker checkpoints its stores between them (every 300 ms of commits).
  const rounds = 5;
  const perRound = 500;
  for (let round = 0; round < rounds; round++) {
    await produceAll(bootstrap, names.input, Array.from({ length: perRound }, (_, i) => ({ key: `k${100 + i}`, value: 'x' })));
    await caughtUp();
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  // SIGKILL mid-life: the stores hold committed writes only, so the last running checkpoint is a valid place to resume from.
  second.kill('SIGKILL');
  await second.exit();
  const third = start();
  const rebuilt = await third.waitFor((e) => e.type === 'restored', 60_000, 'the restore after a SIGKILL');
  assert.equal(rebuilt.fromCheckpoint, 2);
  const sinceCleanStop = rounds * perRound + 3;
  assert.ok(Number(rebuilt.records) < sinceCleanStop, `restored ${rebuilt.records} changelog records, fewer than the ${sinceCleanStop} written since the clean stop: a running checkpoint was used`);
  await produceAll(bootstrap, names.input, [{ key: 'k7', value: 'x' }, { key: 'new', value: 'x' }, { key: 'k5', value: 'x' }, { key: 'k100', value: 'x' }]);
  await caughtUp();
  last = await lastCounts();
  assert.equal(last.size, keys + 1);
  assert.deepEqual(
    [last.get('k7'), last.get(`k${keys - 1}`), last.get('new'), last.get('k5'), last.get('k6'), last.get('k100'), last.get('k599'), last.get('k600')],
    [3, 2, 2, 2, 1, 2 + rounds, 1 + rounds, 1],
  );
  console.log(`# clean restart restored ${resumed.records} records (${resumed.ms} ms); after SIGKILL ${rebuilt.records} (${rebuilt.ms} ms)`);
});
