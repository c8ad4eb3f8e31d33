import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { tumblingWindow } from '../../src/dsl/windows.ts';
import { compile } from '../../src/graph/index.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { windowedSerde } from '../../src/state/windowed.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 3;
const MINUTE = 60_000;
const PAGES = ['home', 'cart', 'checkout'];

interface Click {
  readonly user: string;
  readonly page: string;
  readonly partition: number;
  readonly timestamp: number;
}

/**
 * A backlog waiting for the worker: 300 clicks over 4 minutes, keyed by user across 3 partitions, each
 * partition in time order. Counted per page after a repartition, a worker that takes a fetched batch
 * partition by partition writes the repartition topic one partition's whole time range after another,
 * so the second partition's clicks arrive behind the grace period of windows the first one closed.
 */
function backlog(from: number): Click[] {
  const clicks: Click[] = [];
  for (let i = 0; i < 300; i++) {
    const user = `user-${i % 30}`;
    clicks.push({ user, page: PAGES[i % PAGES.length]!, partition: (i % 30) % PARTITIONS, timestamp: from + i * 800 });
  }
  return clicks;
}

test('a windowed count after a repartition over a backlog in 3 partitions counts every click (batches are taken in time order)', async () => {
  const { bootstrap } = testCluster();
  const input = uniqueName('clicks');
  const output = uniqueName('page-views');
  const appId = uniqueName('page-views-app');
  const app = new TopologyBuilder({ appId });
  app
    .stream(input, { key: stringSerde, value: jsonSerde<{ page: string }>() })
    .groupBy((_user, click) => click.page, { key: stringSerde, value: jsonSerde<{ page: string }>() })
    .windowedBy(tumblingWindow(MINUTE, { graceMs: 5_000 }))
    .count({ name: 'views-per-minute' })
    .toStream()
    .to(output, { value: jsonSerde<number>() });
  const topology = compile(app);
  await createTopics(bootstrap, [
    { name: input, partitions: PARTITIONS },
    { name: output, partitions: PARTITIONS },
  ]);

  // Aligned to a minute, in the past: the broker refuses timestamps far ahead of its clock.
  const from = Math.floor((Date.now() - 3_600_000) / MINUTE) * MINUTE;
  const clicks = backlog(from);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'linger.ms': 5 });
  try {
    for (const c of clicks) producer.produce(input, c.partition, Buffer.from(JSON.stringify({ page: c.page })), c.user, c.timestamp);
    await flush(producer, 30_000);
  } finally {
    await disconnect(producer);
  }

  const expected = new Map<string, number>();
  for (const c of clicks) {
    const start = Math.floor(c.timestamp / MINUTE) * MINUTE;
    const window = `${c.page}@${start - from}`;
    expected.set(window, (expected.get(window) ?? 0) + 1);
  }
  assert.equal(expected.size, PAGES.length * 4, 'three pages in each of four minutes');
  assert.deepEqual(new Set(expected.values()), new Set([25]), 'each page has 25 clicks in each minute');

  const worker = new Worker(runtimeTopology(topology), { bootstrap, appId, instanceId: 'backlog', guarantee: 'exactly_once' });
  await worker.start();
  try {
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], timeoutMs: 120_000 });
  } finally {
    await worker.stop();
  }
  assert.equal(worker.stats.lateRecordsDropped, 0, 'no click was taken for late');

  const counted = new Map<string, number>();
  const keySerde = windowedSerde(stringSerde);
  for (const r of await readTopic(bootstrap, output, { isolation: 'read_committed' })) {
    const w = keySerde.deserialize(r.key!, { topic: output, role: 'key' });
    counted.set(`${w.key}@${w.start - from}`, JSON.parse(r.value!.toString()) as number);
  }
  assert.deepEqual(Object.fromEntries([...counted].sort()), Object.fromEntries([...expected].sort()));
});
