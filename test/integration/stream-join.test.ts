import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { JoinWindows } from '../../src/dsl/windows.ts';
import { compile } from '../../src/graph/index.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

test('a windowed left join restores both window stores on another worker: a record stored by the first joins, or comes out with null, exactly once', async () => {
  const { bootstrap } = testCluster();
  const views = uniqueName('views');
  const clicks = uniqueName('clicks');
  const out = uniqueName('joined');
  const appId = uniqueName('app-stream-join');
  await createTopics(bootstrap, [
    { name: views, partitions: 2 },
    { name: clicks, partitions: 2 },
    { name: out, partitions: 1 },
  ]);
  const app = new TopologyBuilder({ appId });
  const clickStream = app.stream(clicks, { key: stringSerde, value: stringSerde });
  app
    .stream(views, { key: stringSerde, value: stringSerde })
    .leftJoin(clickStream, (_k, view, click) => `${view}+${click ?? '-'}`, JoinWindows.of(5_000), { name: 'view-click', value: stringSerde })
    .to(out);
  const topology = runtimeTopology(compile(app));
  const base = Date.now() - 60_000;
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'linger.ms': 5 });
  // Keys are placed by hand, the same way on both topics: k0 in partition 0, k1 in partition 1.
  const produce = async (records: readonly [topic: string, key: 'k0' | 'k1', value: string, at: number][]) => {
    for (const [topic, key, value, at] of records) producer.produce(topic, key === 'k0' ? 0 : 1, Buffer.from(value), key, base + at);
    await flush(producer, 30_000);
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [views, clicks], stableMs: 1_000 });
  };
  const start = async (instanceId: string) => {
    const worker = new Worker(topology, { bootstrap, appId, instanceId });
    await worker.start();
    return worker;
  };
  try {
    const first = await start('first');
    await produce([
      [views, 'k0', 'v1', 0],
      [views, 'k1', 'v2', 0],
      [clicks, 'k0', 'c1', 2_000],
    ]);
    await first.stop();
    const second = await start('second');
    await produce([
      [clicks, 'k1', 'c2', 3_000],
      [views, 'k0', 'v3', 4_000],
      [views, 'k0', 'v4', 12_000],
    ]);
    await produce([
      [views, 'k0', 'later-0', 20_000],
      [views, 'k1', 'later-1', 20_000],
    ]);
    await second.stop();
  } finally {
    await disconnect(producer);
  }
  const joined = (await readTopic(bootstrap, out, { isolation: 'read_committed' })).map((r) => r.value!.toString()).sort();
  // v2 waited in the first worker's store and met c2 on the second; v4 found no click within 5 s.
  assert.deepEqual(joined, ['v1+c1', 'v2+c2', 'v3+c1', 'v4+-']);
});
