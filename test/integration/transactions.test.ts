import assert from 'node:assert/strict';
import { test } from 'node:test';
import { abortTransaction, beginTransaction, commitTransaction, connectProducer, disconnect, flush, initTransactions } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

test('a committed transaction is visible to read_committed; an aborted one only to read_uncommitted', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('txn');
  await createTopics(bootstrap, [{ name: topic, partitions: 2 }]);
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': uniqueName('txn-id'), 'dr_cb': false });
  try {
    await initTransactions(producer, 30_000);
    await beginTransaction(producer);
    for (let i = 0; i < 10; i++) producer.produce(topic, i % 2, Buffer.from(`committed-${i}`), `k${i}`);
    await commitTransaction(producer, 30_000);
    await beginTransaction(producer);
    for (let i = 0; i < 7; i++) producer.produce(topic, i % 2, Buffer.from(`aborted-${i}`), `k${i}`);
    await flush(producer, 10_000);
    await abortTransaction(producer, 30_000);
  } finally {
    await disconnect(producer);
  }
  const committed = await readTopic(bootstrap, topic, { isolation: 'read_committed' });
  const uncommitted = await readTopic(bootstrap, topic, { isolation: 'read_uncommitted' });
  const values = (rs: typeof committed) => rs.map((r) => r.value?.toString() ?? '').sort();
  assert.deepEqual(values(committed), Array.from({ length: 10 }, (_, i) => `committed-${i}`).sort());
  assert.equal(uncommitted.length, 17);
  assert.equal(uncommitted.filter((r) => r.value?.toString().startsWith('aborted-')).length, 7);
});
