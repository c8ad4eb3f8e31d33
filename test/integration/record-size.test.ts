import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import { kafkaClients } from '../../src/runtime/base/client-supplier.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { WorkerError } from '../../src/runtime/base/errors.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics } from '../support/cluster.ts';
import { mapValuesApp } from '../support/map-values-app.ts';

/** Inputs a, inflate, b; `inflate` maps to a value of `inflatedBytes`, the others to upper case. */
async function sizeScenario(prefix: string, inflatedBytes: number, outputConfig?: Record<string, string>) {
  const { bootstrap, input, output, appId, topology, dlq } = mapValuesApp(prefix, (v) => (v === 'inflate' ? 'x'.repeat(inflatedBytes) : (v ?? '').toUpperCase()));
  await createTopics(bootstrap, [
    { name: input, partitions: 1 },
    { name: output, partitions: 1, ...(outputConfig ? { config: outputConfig } : {}) },
    { name: dlq, partitions: 1 },
  ]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap });
  for (const v of ['a', 'inflate', 'b']) producer.produce(input, 0, Buffer.from(v), 'k');
  await flush(producer, 30_000);
  await disconnect(producer);
  return { bootstrap, input, output, appId, topology, dlq };
}

/** Runs a worker until the input is consumed, then checks that only `inflate` was dead-lettered. */
async function runAndExpectInflateDeadLettered(s: Awaited<ReturnType<typeof sizeScenario>>, kafka: Record<string, number>): Promise<Worker> {
  const worker = new Worker(runtimeTopology(s.topology), { bootstrap: s.bootstrap, appId: s.appId, instanceId: 'only', kafka });
  await worker.start();
  try {
    await waitCaughtUp({ bootstrap: s.bootstrap, groupId: s.appId, plainTopics: [s.input], timeoutMs: 120_000 });
  } finally {
    await worker.stop();
  }
  assert.deepEqual(
    (await readTopic(s.bootstrap, s.output)).map((r) => r.value?.toString()),
    ['A', 'B'],
  );
  const dead = await readTopic(s.bootstrap, s.dlq);
  assert.equal(dead.length, 1);
  assert.equal(dead[0]?.value?.toString(), 'inflate');
  assert.equal(dead[0]?.headers.find((h) => h.key === 'onceflow.error.code')?.value.toString(), 'RECORD_TOO_LARGE');
  return worker;
}

// librdkafka refuses a record over message.max.bytes inside produce(); before the size check that
// failed the transaction on every replay, and the partition never moved again.
test('an output over the producer message.max.bytes is dead-lettered with its input, and the partition goes on', async () => {
  const scenario = await sizeScenario('sizes', 30_000);
  const worker = await runAndExpectInflateDeadLettered(scenario, { 'message.max.bytes': 20_000 });
  assert.equal(worker.stats.transactionsAborted, 0, 'no transaction had to be aborted');
});

// The topic's own max.message.bytes is below the producer's. Learnt at start (DescribeConfigs), the
// record is dead-lettered before it is produced. Where the limit cannot be learnt (here: a client
// supplier without the call, as on a secured listener), librdkafka lets the record through and the
// broker refuses its batch in every replay: the worker must stop with the topic named and commit nothing.
test('an output topic whose max.message.bytes is below the producer limit: learnt, the record is dead-lettered; not learnt, the worker stops with the topic named', { timeout: 180_000 }, async () => {
  const scenario = await sizeScenario('topic-size', 10_000, { 'max.message.bytes': '5000' });
  const refused = new Worker(runtimeTopology(scenario.topology), { bootstrap: scenario.bootstrap, appId: scenario.appId, instanceId: 'only' }, { clients: { ...kafkaClients, topicMaxMessageBytes: undefined } });
  await refused.start();
  await assert.rejects(refused.done(), (e: unknown) => {
    assert.ok(e instanceof WorkerError, String(e));
    assert.equal(e.code, 'RECORD_TOO_LARGE_FOR_TOPIC');
    assert.ok(e.message.includes(`topic ${scenario.output}`), e.message);
    assert.match(e.message, /kafka\.message\.max\.bytes and kafka\.batch\.size/);
    return true;
  });
  assert.equal(refused.stats.transactionsCommitted, 0);
  assert.deepEqual(await readTopic(scenario.bootstrap, scenario.output), [], 'nothing of the refused transactions is visible');
  const worker = await runAndExpectInflateDeadLettered(scenario, {});
  assert.equal(worker.stats.transactionsAborted, 0, 'the limit was known before produce');
});
