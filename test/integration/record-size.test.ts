import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/builder.ts';
import { compile } from '../../src/graph/index.ts';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

// librdkafka refuses a record over message.max.bytes inside produce(); before the size check that
// failed the transaction on every replay, and the partition never moved again.
test('an output over the producer message.max.bytes is dead-lettered with its input, and the partition goes on', async () => {
  const { bootstrap } = testCluster();
  const input = uniqueName('sizes-in');
  const output = uniqueName('sizes-out');
  const appId = uniqueName('sizes-app');
  const app = new TopologyBuilder({ appId });
  app
    .stream(input, { key: stringSerde, value: stringSerde })
    .mapValues((v) => (v === 'inflate' ? 'x'.repeat(30_000) : (v ?? '').toUpperCase()))
    .to(output, { key: stringSerde, value: stringSerde });
  const topology = compile(app);
  const dlq = topology.topics.find((t) => t.kind === 'dead-letter')?.name;
  assert.ok(dlq);
  await createTopics(bootstrap, [
    { name: input, partitions: 1 },
    { name: output, partitions: 1 },
    { name: dlq, partitions: 1 },
  ]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap });
  for (const v of ['a', 'inflate', 'b']) producer.produce(input, 0, Buffer.from(v), 'k');
  await flush(producer, 30_000);
  await disconnect(producer);

  const worker = new Worker(topology, { bootstrap, appId, instanceId: 'only', kafka: { 'message.max.bytes': 20_000 } });
  await worker.start();
  try {
    await waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [input], timeoutMs: 120_000 });
  } finally {
    await worker.stop();
  }
  const out = await readTopic(bootstrap, output);
  assert.deepEqual(
    out.map((r) => r.value?.toString()),
    ['A', 'B'],
  );
  const dead = await readTopic(bootstrap, dlq);
  assert.equal(dead.length, 1);
  assert.equal(dead[0]?.value?.toString(), 'inflate');
  assert.equal(dead[0]?.headers.find((h) => h.key === 'onceflow.error.code')?.value.toString(), 'RECORD_TOO_LARGE');
  assert.equal(worker.stats.transactionsAborted, 0, 'no transaction had to be aborted');
});
