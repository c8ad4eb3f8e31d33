import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess, type WorkerEventLine } from '../../src/verify/worker-process.ts';
import { partitionFor } from '../../src/core/partitioner.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';

const workers: WorkerProcess[] = [];
const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-standby-test-'));
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  rmSync(stateDir, { recursive: true, force: true });
});

const names = (e: WorkerEventLine, field: string): string[] => (Array.isArray(e[field]) ? (e[field] as string[]) : []);

test('a task that moves to the replica keeping it warm restores only the tail of its changelog, and the counts stay exact', async () => {
  const { bootstrap } = testCluster();
  const topics = { input: uniqueName('standby-in'), output: uniqueName('standby-out'), appId: uniqueName('standby') };
  await createTopics(bootstrap, [{ name: topics.input, partitions: 2 }, { name: topics.output, partitions: 2 }]);
  const keys = 20_000;
  await produceAll(bootstrap, topics.input, Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, value: 'x' })));
  const start = (instance: string, httpPort?: number) => {
    const http = httpPort === undefined ? [] : ['--http-port', String(httpPort)];
    const w = new WorkerProcess(instance, 'test/fixtures/count-by-key.ts', ['--app-id', topics.appId, '--instance-id', instance, '--state-store', 'persistent', '--state-dir', stateDir, ...http], {
      ONCEFLOW_BOOTSTRAP: bootstrap,
      COUNT_INPUT: topics.input,
      COUNT_OUTPUT: topics.output,
      ONCEFLOW_STANDBY_REPLICAS: '1',
      ONCEFLOW_SESSION_TIMEOUT_MS: '3000',
      ONCEFLOW_STATE_CHECKPOINT_INTERVAL_MS: '500',
    });
    workers.push(w);
    return w;
  };
  const caughtUp = () => waitCaughtUp({ bootstrap, groupId: topics.appId, plainTopics: [topics.input], timeoutMs: 120_000 });

  const a = start('a');
  await a.waitFor((e) => e.type === 'restored', 60_000, 'the first restore');
  await caughtUp();
  const bPort = await freePort();
  const b = start('b', bPort);
  // Cooperative rebalancing hands one of a's two tasks to b (b may have begun warming both meanwhile, and
  // released the one it got); then each keeps the other's task warm.
  const warmAndCaughtUp = async (w: WorkerProcess): Promise<string> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const standby = w.events.filter((e) => e.type === 'standby');
      const now = standby.at(-1) === undefined ? [] : names(standby.at(-1)!, 'tasks');
      const warm = now.find((id) => standby.some((e) => names(e, 'caughtUp').includes(id)));
      if (now.length === 1 && warm !== undefined && w.count('assigned') > 0) return warm;
      assert.ok(Date.now() < deadline, `${w.name} keeps one task of the other replica warm and caught up: ${JSON.stringify(standby)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const moving = await warmAndCaughtUp(b);
  await warmAndCaughtUp(a);
  assert.ok(b.events.filter((e) => e.type === 'assigned').every((e) => !names(e, 'partitions').includes(`${topics.input}-${moving.split('_')[1]}`)), `b does not own the task it keeps warm (${moving})`);

  // A stale read of a key b does not own is answered from its warm copy, and says so; a plain read points elsewhere.
  const warmKey = Array.from({ length: 100 }, (_, i) => `k${i}`).find((k) => partitionFor(Buffer.from(k), 2) === Number(moving.split('_')[1]))!;
  const staleRead = (await (await fetch(`http://127.0.0.1:${bPort}/stores/counts/${warmKey}?stale=1`)).json()) as Record<string, unknown>;
  assert.deepEqual([staleRead.value, staleRead.stale], [1, true], JSON.stringify(staleRead));
  const plainRead = await fetch(`http://127.0.0.1:${bPort}/stores/counts/${warmKey}`);
  assert.notEqual(plainRead.status, 200, 'without ?stale=1 the warm copy is not read');

  // Updates while both run: b's warm copy follows a's changelog.
  await produceAll(bootstrap, topics.input, Array.from({ length: 2_000 }, (_, i) => ({ key: `k${i}`, value: 'x' })));
  await caughtUp();
  const restoresBefore = b.count('restored');
  a.kill('SIGKILL');
  await a.exit();
  const released = await b.waitFor((e) => e.type === 'standby' && names(e, 'released').includes(moving), 120_000, `b taking over task ${moving} from its warm copy`);
  assert.ok(released);
  const restored = await b.waitFor((e) => e.type === 'restored' && b.events.filter((x) => x.type === 'restored').indexOf(e) >= restoresBefore, 120_000, 'the restore of the moved task');
  assert.ok(Number(restored.fromCheckpoint) >= 1, `the moved task resumed from the warm copy's checkpoint: ${JSON.stringify(restored)}`);
  assert.ok(Number(restored.records) < keys / 20, `restored ${restored.records} changelog records, not the ~${keys / 2 + 1_000} its changelog holds`);

  await produceAll(bootstrap, topics.input, [{ key: 'k1', value: 'x' }, { key: 'k2', value: 'x' }, { key: `k${keys - 1}`, value: 'x' }, { key: 'new', value: 'x' }]);
  await caughtUp();
  const last = new Map<string, number>();
  for (const r of (await readTopic(bootstrap, topics.output)).sort((x, y) => x.partition - y.partition || x.offset - y.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
  assert.equal(last.size, keys + 1);
  assert.deepEqual([last.get('k1'), last.get('k2'), last.get('k1999'), last.get('k2000'), last.get(`k${keys - 1}`), last.get('new')], [3, 3, 2, 1, 2, 1]);
  console.log(`# standby: task ${moving} moved, restored ${restored.records} records from its warm copy in ${restored.ms} ms`);
});
