import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { InProcessThread } from '../runtime/offload/in-process-thread.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

function counting(appId: string, input: string, output: string) {
  const builder = new TopologyBuilder({ appId });
  builder.stream(input, { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'count' }).toStream().to(output, { key: stringSerde, value: jsonSerde<number>() });
  return compile(builder);
}

test('a processing thread that dies after commits: its tasks are restored from their changelogs elsewhere, and every count is exact', async () => {
  const { bootstrap } = testCluster();
  const appId = uniqueName('thread-death');
  const input = uniqueName('td-in');
  const output = uniqueName('td-out');
  await createTopics(bootstrap, [{ name: input, partitions: 2 }, { name: output, partitions: 2 }]);
  const keys = 50;
  const rounds = 40;
  const records = Array.from({ length: keys * rounds }, (_, i) => ({ key: `k${i % keys}`, value: 'x' }));
  await produceAll(bootstrap, input, records.slice(0, records.length / 2));
  // Two threads; the first dies once the first half is committed, at its next request: the changelog
  // then holds state the restored tasks must resume from.
  const threads = [new InProcessThread(async () => counting(appId, input, output)), new InProcessThread(async () => counting(appId, input, output))];
  let next = 0;
  const worker = new Worker(
    counting(appId, input, output),
    { bootstrap, appId, instanceId: 'only', commitIntervalMs: 50, consumeBatchSize: 50, cacheMaxBytes: 0, threads: 2 },
    // A thread started in place of the dead one is a healthy one.
    { processingThread: { spawn: () => threads[next++] ?? new InProcessThread(async () => counting(appId, input, output)), file: 'in-process' } },
  );
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  await worker.start();
  try {
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], stableMs: 500, timeoutMs: 120_000 });
    threads[0]!.dieAtNextRequest();
    await produceAll(bootstrap, input, records.slice(records.length / 2));
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], stableMs: 1_000, timeoutMs: 120_000 });
  } finally {
    await worker.stop();
  }
  const warned = events.filter((e) => e.type === 'processing-thread' && e.failed === true);
  assert.equal(warned.length, 1, 'the dead thread is reported once');
  assert.equal((warned[0] as { restarted?: number }).restarted, 1, 'and started again');
  const died = events.indexOf(warned[0]!);
  assert.ok(events.slice(0, died).some((e) => e.type === 'committed'), 'commits went through before the thread died');
  const restored = events.slice(died).find((e) => e.type === 'restored');
  assert.ok(restored !== undefined && restored.records > 0, `its tasks were restored from their changelogs: ${JSON.stringify(restored)}`);
  assert.ok(events.slice(died).some((e) => e.type === 'committed'), 'commits went on after');
  const last = new Map<string, number>();
  for (const r of (await readTopic(bootstrap, output, { isolation: 'read_committed' })).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) last.set(r.key!.toString(), Number(r.value!.toString()));
  assert.equal(last.size, keys);
  for (const [key, count] of last) assert.equal(count, rounds, `count of ${key}`);
});
