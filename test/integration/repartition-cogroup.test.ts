import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { partitionFor } from '../../src/core/partitioner.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { partitionsOf, readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

interface Activity { readonly clicks: number; readonly spent: number }

test('repartition({ partitions: 3 }) and a cogroup of two streams on a real broker: the topic gets 3 partitions, every user ends with its exact clicks and spend across a worker restart', async () => {
  const { bootstrap } = testCluster();
  const clicks = uniqueName('clicks');
  const purchases = uniqueName('purchases');
  const out = uniqueName('activity');
  const appId = uniqueName('app-cogroup');
  await createTopics(bootstrap, [
    { name: clicks, partitions: 2 },
    { name: purchases, partitions: 2 },
    { name: out, partitions: 1 },
  ]);
  const app = new TopologyBuilder({ appId });
  // clicks keyed by session, value the user: re-keyed by user, through an explicit 3-partition topic, then counted per user
  const clickStream = app.stream(clicks, { key: stringSerde, value: stringSerde });
  const byUser = clickStream
    .selectKey((_session, user) => user, { key: stringSerde })
    .repartition({ name: 'clicks-by-user', partitions: 3 });
  byUser.groupByKey().count({ name: 'clicks-per-user' }).toStream().to(`${out}-counts`, { value: jsonSerde<number>() });
  // the same clicks (re-keyed, so repartitioned for the cogroup) with the purchases, keyed by user
  clickStream
    .groupBy((_session, user) => user, { key: stringSerde })
    .cogroup((_user, _click, a: Activity) => ({ ...a, clicks: a.clicks + 1 }))
    .cogroup(app.stream(purchases, { key: stringSerde, value: jsonSerde<number>() }).groupByKey(), (_user, amount, a) => ({ ...a, spent: a.spent + amount }))
    .aggregate(() => ({ clicks: 0, spent: 0 }), { state: jsonSerde<Activity>(), name: 'activity' })
    .toStream()
    .to(out, { value: jsonSerde<Activity>() });
  const topology = runtimeTopology(compile(app));
  await createTopics(bootstrap, [{ name: `${out}-counts`, partitions: 1 }]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'linger.ms': 5 });
  const users = ['ann', 'bob', 'cid', 'dee', 'eve'];
  const expected = new Map(users.map((u) => [u, { clicks: 0, spent: 0 }]));
  const base = Date.now() - 60_000;
  const produce = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const user = users[i % users.length]!;
      const e = expected.get(user)!;
      // timestamps a little out of order: a cogroup without windows counts every record
      const at = base + i * 10 - (i % 3) * 25;
      if (i % 4 === 0) {
        // placed as Kafka's Java producer (and onceflow's repartition sinks) place keys, so that purchases meet the repartitioned clicks
        producer.produce(purchases, partitionFor(Buffer.from(user), 2), Buffer.from(String(i)), user, at);
        expected.set(user, { ...e, spent: e.spent + i });
      } else {
        producer.produce(clicks, null, Buffer.from(user), `s${i}`, at);
        expected.set(user, { ...e, clicks: e.clicks + 1 });
      }
    }
    await flush(producer, 30_000);
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [clicks, purchases], stableMs: 1_000 });
  };
  try {
    const first = new Worker(topology, { bootstrap, appId, instanceId: 'first' });
    await first.start();
    await produce(0, 200);
    await first.stop();
    const second = new Worker(topology, { bootstrap, appId, instanceId: 'second' });
    await second.start();
    await produce(200, 400);
    await second.stop();
  } finally {
    await disconnect(producer);
  }
  assert.equal(await partitionsOf(bootstrap, `${appId}-clicks-by-user-repartition`, undefined), 3);
  const last = new Map<string, Activity>();
  for (const r of await readTopic(bootstrap, out, { isolation: 'read_committed' })) last.set(r.key!.toString(), JSON.parse(r.value!.toString()) as Activity);
  assert.deepEqual(Object.fromEntries(last), Object.fromEntries(expected));
  const counts = new Map<string, number>();
  for (const r of await readTopic(bootstrap, `${out}-counts`, { isolation: 'read_committed' })) counts.set(r.key!.toString(), Number(r.value!.toString()));
  assert.deepEqual(Object.fromEntries(counts), Object.fromEntries([...expected].map(([u, a]) => [u, a.clicks])));
});
