import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const record = (key: string, value: string, timestamp: number) => ({ key: Buffer.from(key), value: Buffer.from(value), timestamp });

test('stream records waiting out a stream-table join grace period survive a restart: the new worker restores them and joins them when stream time lets them go', async () => {
  const { bootstrap } = testCluster();
  const t = { rates: uniqueName('grace-rates'), payments: uniqueName('grace-payments'), priced: uniqueName('grace-priced') };
  const appId = uniqueName('app-grace');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: 1 })));
  const app = new TopologyBuilder({ appId });
  const rates = app.table(t.rates, { key: stringSerde, value: jsonSerde<number>(), versioned: { historyRetentionMs: 60_000 } });
  app
    .stream(t.payments, { key: stringSerde, value: stringSerde })
    .join(rates, (_k, payment, rate) => `${payment}@${rate}`, { name: 'price', value: stringSerde, graceMs: 5_000 })
    .to(t.priced);
  const compiled = compile(app);
  const base = Date.now() - 60_000;
  const caughtUp = () => waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.rates, t.payments], stableMs: 1_000 });
  const priced = async () => (await readTopic(bootstrap, t.priced, { isolation: 'read_committed' })).map((r) => `${r.value!.toString()}/${r.timestamp - base}`);
  const run = async (instanceId: string, body: () => Promise<void>): Promise<void> => {
    const worker = new Worker(runtimeTopology(compiled), { bootstrap, appId, instanceId });
    await worker.start();
    try {
      await body();
    } finally {
      await worker.stop();
    }
  };

  await produceRecords(bootstrap, t.rates, [record('eur', '100', base)]);
  await run('first', async () => {
    await caughtUp();
    await produceRecords(bootstrap, t.payments, [record('eur', 'p1', base + 1_000)]);
    await caughtUp();
    // Older than p1, and after it: the grace period is what lets p1 meet it.
    await produceRecords(bootstrap, t.rates, [record('eur', '105', base + 500)]);
    await caughtUp();
  });
  assert.deepEqual(await priced(), [], 'p1 still waits: stream time is 1 s, its grace runs to 6 s');

  await run('second', async () => {
    await caughtUp();
    await produceRecords(bootstrap, t.payments, [record('eur', 'p10', base + 10_000)]);
    await caughtUp();
  });
  assert.deepEqual(await priced(), ['p1@105/1000'], 'restored from the buffer changelog, joined with the late rate, stamped with its own time; p10 waits in turn');
});
