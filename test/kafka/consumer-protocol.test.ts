/**
 * What exactly-once needs from the KIP-848 consumer group protocol (`group.protocol=consumer`), proven on
 * the real broker before any worker uses it (issue #41): offsets sent to a transaction with the consumer's
 * group metadata commit with it; a member the group no longer knows (a zombie) cannot commit its
 * transaction's offsets, and the error says so in a way the worker aborts on; and the broker's range
 * assignor hands out partition N of equally sized topics together, moving only what it must.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { KafkaConsumer, LibrdKafkaError, Producer } from '@confluentinc/kafka-javascript';
import { ERR, assignmentChanges, beginTransaction, commitTransaction, committedOffsets, connectConsumer, connectProducer, disconnect, initTransactions, isKafkaError, abortTransaction, sendOffsetsToTransaction, type RdConfig } from '../../src/kafka/clients.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { sendToAnyBroker, type BrokerRequest } from '../../src/kafka/wire.ts';
import { classifyTxnError } from '../../src/runtime/transaction/kafka-errors.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

type Assignment = { topic: string; partition: number }[];

/** A consumer of `group` under the consumer protocol with the range assignor, recording what it owns. */
async function member(bootstrap: string, group: string, topics: string[], extra: RdConfig = {}): Promise<{ consumer: KafkaConsumer; owned: Set<string>; revoked: string[][] }> {
  const owned = new Set<string>();
  const revoked: string[][] = [];
  let consumer: KafkaConsumer | undefined;
  consumer = await connectConsumer({
    'bootstrap.servers': bootstrap,
    'group.id': group,
    'group.protocol': 'consumer',
    'group.remote.assignor': 'range',
    'enable.auto.commit': false,
    'auto.offset.reset': 'earliest',
    'isolation.level': 'read_committed',
    rebalance_cb: (err: LibrdKafkaError, assignment: Assignment) => {
      const names = assignment.map((p) => `${p.topic}-${p.partition}`);
      if (err.code === ERR.ERR__ASSIGN_PARTITIONS) {
        for (const n of names) owned.add(n);
        assignmentChanges(consumer!).add(assignment);
      } else {
        for (const n of names) owned.delete(n);
        revoked.push(names);
        assignmentChanges(consumer!).remove(assignment);
      }
    },
    ...extra,
  });
  consumer.subscribe(topics);
  return { consumer, owned, revoked };
}

/** Serves the consumers' callbacks (rebalances run inside consume) until `done`. */
async function pollUntil(consumers: KafkaConsumer[], done: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Promise.all(consumers.map((c) => new Promise<void>((resolve) => c.consume(10, () => resolve()))));
    await sleep(50);
  }
}

/** LeaveGroup v3 for a static member: how an operator (or the admin client) removes a member from the group. */
function leaveGroupRequest(group: string, instanceId: string): BrokerRequest<{ errorCode: number; members: { errorCode: number }[] }> {
  return {
    apiKey: 13,
    version: 3,
    body: (w) => {
      w.string(group).array([instanceId], (id) => w.string('').string(id));
    },
    parse: (r) => {
      r.int32(); // throttle time
      const errorCode = r.int16();
      const members = r.array(() => ({ memberId: r.nullableString(), instanceId: r.nullableString(), errorCode: r.int16() }));
      return { errorCode, members };
    },
  };
}

function transactionalProducer(bootstrap: string): Promise<Producer> {
  return connectProducer({ 'bootstrap.servers': bootstrap, 'transactional.id': uniqueName('txn'), 'transaction.timeout.ms': 60_000 });
}

describe('the KIP-848 consumer group protocol under transactions (real broker)', { concurrency: false }, () => {
  test('offsets sent to a transaction with the group metadata commit with it', async () => {
    const { bootstrap } = testCluster();
    const input = uniqueName('kip848-in');
    const output = uniqueName('kip848-out');
    const group = uniqueName('kip848-group');
    await createTopics(bootstrap, [{ name: input, partitions: 1 }, { name: output, partitions: 1 }]);
    await produceRecords(bootstrap, input, [{ key: Buffer.from('k'), value: Buffer.from('v') }]);
    const m = await member(bootstrap, group, [input]);
    const producer = await transactionalProducer(bootstrap);
    try {
      await pollUntil([m.consumer], () => m.owned.size === 1, 'the assignment');
      await initTransactions(producer, 30_000);
      await beginTransaction(producer);
      producer.produce(output, 0, Buffer.from('out'), Buffer.from('k'));
      await sendOffsetsToTransaction(producer, [{ topic: input, partition: 0, offset: 1 }], m.consumer, 30_000);
      await commitTransaction(producer, 30_000);
      const committed = await committedOffsets(m.consumer, [{ topic: input, partition: 0 }], 30_000);
      assert.equal(committed[0]?.offset, 1);
      assert.equal((await readTopic(bootstrap, output, { isolation: 'read_committed' })).length, 1);
    } finally {
      await disconnect(producer);
      await disconnect(m.consumer);
    }
  });

  test('a member removed from the group (a zombie) cannot commit its transaction: the offsets are refused and the worker aborts', async () => {
    const { bootstrap } = testCluster();
    const input = uniqueName('kip848-in');
    const output = uniqueName('kip848-out');
    const group = uniqueName('kip848-group');
    await createTopics(bootstrap, [{ name: input, partitions: 1 }, { name: output, partitions: 1 }]);
    const zombie = await member(bootstrap, group, [input], { 'group.instance.id': 'zombie' });
    const producer = await transactionalProducer(bootstrap);
    try {
      await pollUntil([zombie.consumer], () => zombie.owned.size === 1, 'the assignment');
      await initTransactions(producer, 30_000);
      await beginTransaction(producer);
      producer.produce(output, 0, Buffer.from('out'), Buffer.from('k'));
      const left = await sendToAnyBroker(bootstrap, leaveGroupRequest(group, 'zombie'));
      assert.deepEqual([left.errorCode, left.members.map((x) => x.errorCode)], [0, [0]]);
      let refused: unknown;
      try {
        await sendOffsetsToTransaction(producer, [{ topic: input, partition: 0, offset: 1 }], zombie.consumer, 30_000);
        await commitTransaction(producer, 30_000);
      } catch (e) {
        refused = e;
      }
      assert.ok(isKafkaError(refused), `the commit went through: ${String(refused)}`);
      console.log(`zombie commit refused: code ${refused.code} (${refused.message}), requires abort ${refused.isTxnRequiresAbort}, fatal ${refused.isFatal}`);
      assert.ok([ERR.ERR_UNKNOWN_MEMBER_ID, ERR.ERR_STALE_MEMBER_EPOCH, ERR.ERR_FENCED_MEMBER_EPOCH, ERR.ERR_ILLEGAL_GENERATION].includes(refused.code), refused.message);
      assert.equal(classifyTxnError(refused), 'abortable');
      await abortTransaction(producer, 30_000);
      assert.equal((await readTopic(bootstrap, output, { isolation: 'read_committed' })).length, 0);
    } finally {
      await disconnect(producer);
      await disconnect(zombie.consumer);
    }
  });

  test('the range assignor gives partition N of equally sized topics together and, when a member joins, revokes only partitions that move', async () => {
    const { bootstrap } = testCluster();
    const left = uniqueName('kip848-left');
    const right = uniqueName('kip848-right');
    const group = uniqueName('kip848-group');
    await createTopics(bootstrap, [{ name: left, partitions: 6 }, { name: right, partitions: 6 }]);
    const members = [await member(bootstrap, group, [left, right]), await member(bootstrap, group, [left, right]), await member(bootstrap, group, [left, right])];
    const consumers = () => members.map((x) => x.consumer);
    const settled = (n: number) => () => members.length === n && members.reduce((s, x) => s + x.owned.size, 0) === 12 && members.every((x) => x.owned.size === 12 / n);
    try {
      await pollUntil(consumers(), settled(3), '3 members sharing 12 partitions');
      const before = members.map((x) => new Set(x.owned));
      for (const x of members) x.revoked.length = 0;
      members.push(await member(bootstrap, group, [left, right]));
      await pollUntil(consumers(), () => members.reduce((s, x) => s + x.owned.size, 0) === 12 && members.every((x) => x.owned.size >= 2), '4 members sharing 12 partitions');
      for (const x of members) {
        const ofLeft = [...x.owned].filter((n) => n.startsWith(`${left}-`)).map((n) => Number(n.slice(n.lastIndexOf('-') + 1))).sort();
        const ofRight = [...x.owned].filter((n) => n.startsWith(`${right}-`)).map((n) => Number(n.slice(n.lastIndexOf('-') + 1))).sort();
        assert.deepEqual(ofLeft, ofRight, `split: ${[...x.owned].join(', ')}`);
      }
      // Incremental: a member revoked only partitions now owned by another, and at least one of the first three kept some throughout.
      const ownerNow = new Map(members.flatMap((x, i) => [...x.owned].map((n) => [n, i] as const)));
      for (const [i, x] of members.slice(0, 3).entries()) {
        const revokedNames = x.revoked.flat();
        assert.ok(revokedNames.every((n) => ownerNow.get(n) !== i), `member ${i} revoked a partition it owns again: ${revokedNames.join(', ')}`);
      }
      assert.ok(members.slice(0, 3).some((x, i) => [...before[i]!].some((n) => x.owned.has(n) && !x.revoked.flat().includes(n))), 'every member revoked every partition');
      console.log(`after the 4th joined: ${members.map((x) => [...x.owned].sort().join(' ')).join(' | ')}; revoked ${members.map((x) => x.revoked.flat().length).join(', ')}`);
    } finally {
      await Promise.all(members.map((x) => disconnect(x.consumer)));
    }
  });
});
