import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Producer } from '@confluentinc/kafka-javascript';
import { abortTransaction, beginTransaction, commitTransaction, connectProducer, disconnect, initTransactions } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { classifyTxnError, isFencing } from '../../src/runtime/transaction/kafka-errors.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

// The worker's reaction to a failed transaction is decided by classifyTxnError; these errors come from
// the real broker through librdkafka, not from hand-made objects, so the classification is checked
// against what the client really reports.

async function transactionalProducer(bootstrap: string, txnId: string): Promise<Producer> {
  const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': txnId, 'dr_cb': false, 'linger.ms': 0 });
  await initTransactions(producer, 30_000);
  return producer;
}

/** The error the call rejected with, or undefined when it succeeded. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return e ?? new Error('rejected without an error');
  }
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  const e = await rejection(p);
  assert.ok(e !== undefined, 'the call succeeded');
  return e;
}

test('a record the broker refuses makes the transaction abortable; after the abort the producer goes on', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('small-records');
  await createTopics(bootstrap, [{ name: topic, partitions: 1, config: { 'max.message.bytes': '1024' } }]);
  const producer = await transactionalProducer(bootstrap, uniqueName('abortable'));
  try {
    await beginTransaction(producer);
    producer.produce(topic, 0, Buffer.from('fits'), 'k');
    producer.produce(topic, 0, Buffer.alloc(4096, 'x'), 'k');
    const e = await failure(commitTransaction(producer, 30_000));
    assert.equal(classifyTxnError(e), 'abortable', `classified from ${JSON.stringify(e)}`);
    assert.equal(isFencing(e), false);
    await abortTransaction(producer, 30_000);
    // Found here: the transaction after such an abort can fail once more ("skipped sequence numbers",
    // also abortable) before librdkafka has bumped the epoch; the worker's abort-and-retry covers it.
    const failures: string[] = [];
    for (let attempt = 1; ; attempt++) {
      await beginTransaction(producer);
      producer.produce(topic, 0, Buffer.from('after the abort'), 'k');
      const retry = await rejection(commitTransaction(producer, 30_000));
      if (retry === undefined) break;
      assert.equal(classifyTxnError(retry), 'abortable', `classified from ${JSON.stringify(retry)}`);
      failures.push(String(retry));
      assert.ok(attempt < 3, `still failing after ${attempt} aborts: ${failures.join('; ')}`);
      await abortTransaction(producer, 30_000);
    }
  } finally {
    await disconnect(producer);
  }
  const committed = await readTopic(bootstrap, topic, { isolation: 'read_committed' });
  assert.deepEqual(
    committed.map((r) => r.value?.toString()),
    ['after the abort'],
  );
});

test('a producer whose transactional id a newer incarnation took over is fenced: fatal, never retried', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('fenced');
  await createTopics(bootstrap, [{ name: topic, partitions: 1 }]);
  const txnId = uniqueName('zombie');
  const zombie = await transactionalProducer(bootstrap, txnId);
  const successor = await transactionalProducer(bootstrap, txnId);
  try {
    await beginTransaction(zombie);
    zombie.produce(topic, 0, Buffer.from('from the zombie'), 'k');
    const e = await failure(commitTransaction(zombie, 30_000));
    assert.equal(classifyTxnError(e), 'fatal', `classified from ${JSON.stringify(e)}`);
    assert.equal(isFencing(e), true);
    await beginTransaction(successor);
    successor.produce(topic, 0, Buffer.from('from the successor'), 'k');
    await commitTransaction(successor, 30_000);
  } finally {
    await disconnect(zombie);
    await disconnect(successor);
  }
  const committed = await readTopic(bootstrap, topic, { isolation: 'read_committed' });
  assert.deepEqual(
    committed.map((r) => r.value?.toString()),
    ['from the successor'],
  );
});

test('errors that are not librdkafka errors are unknown, so the worker resolves the commit by reading offsets back', () => {
  assert.equal(classifyTxnError(new Error('boom')), 'unknown');
  assert.equal(classifyTxnError({ code: 'ECONNRESET', retriable: true }), 'unknown');
});
