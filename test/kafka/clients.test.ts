import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectProducer, disconnect, flush } from '../../src/kafka/clients.ts';
import { createTopics, testCluster } from '../support/cluster.ts';

test('once a producer starts disconnecting, its poll interval calls the binding no more (a tick during the handle delete was a SIGSEGV)', async () => {
  const { bootstrap } = testCluster();
  const topic = `clients-poll-${process.pid}`;
  await createTopics(bootstrap, [{ name: topic, partitions: 1 }]);
  for (let round = 0; round < 5; round++) {
    const producer = await connectProducer({ 'bootstrap.servers': bootstrap, 'enable.idempotence': true });
    // Every millisecond: the delete on the libuv thread takes several, so a surviving interval is sure to tick inside it.
    producer.setPollInterval(1);
    for (let i = 0; i < 20; i++) producer.produce(topic, null, Buffer.from(`value-${i}`), Buffer.from(`key-${i}`));
    await flush(producer, 10_000);
    const polled = { before: 0, during: 0 };
    let disconnecting = false;
    const poll = producer.poll.bind(producer);
    producer.poll = () => {
      if (disconnecting) polled.during++;
      else polled.before++;
      return poll();
    };
    await new Promise((resolve) => setTimeout(resolve, 30));
    disconnecting = true;
    await disconnect(producer, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.ok(polled.before > 0, `the interval polled while connected (round ${round})`);
    assert.equal(polled.during, 0, `polls after disconnect began (round ${round})`);
  }
});
