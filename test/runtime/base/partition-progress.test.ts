import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OFFSET_BEGINNING } from '../../../src/kafka/clients.ts';
import { PartitionProgress, partitionKey, parsePartitionKey } from '../../../src/runtime/base/partition-progress.ts';

test('after a failure every owned partition is unsettled, not only those the transaction touched, and none of them may be processed', () => {
  const progress = new PartitionProgress();
  const touched = partitionKey('in', 0);
  const untouched = partitionKey('in', 1);
  progress.committed.set(touched, 10);
  progress.committed.set(untouched, undefined);
  progress.pending.set(touched, { topic: 'in', partition: 0, offset: 15 });
  progress.unsettle([touched, untouched]);
  assert.equal(progress.pending.size, 0, 'the failed transaction\'s offsets are dropped');
  assert.equal(progress.mayProcess(touched), false);
  assert.equal(progress.mayProcess(untouched), false);
  assert.deepEqual(progress.rewindTarget(touched), { topic: 'in', partition: 0, offset: 10 });
  assert.deepEqual(progress.rewindTarget(untouched), { topic: 'in', partition: 1, offset: OFFSET_BEGINNING });
  progress.settled(touched);
  assert.equal(progress.mayProcess(touched), true);
  assert.equal(progress.mayProcess(untouched), false);
});

test('a partition assigned at its committed offset is settled; a commit moves the committed offsets', () => {
  const progress = new PartitionProgress();
  const key = partitionKey('orders-repartition', 3);
  progress.unsettle([key]);
  progress.committed.set(key, 42);
  assert.deepEqual(progress.assignAt({ topic: 'orders-repartition', partition: 3 }), { topic: 'orders-repartition', partition: 3, offset: 42 });
  assert.equal(progress.mayProcess(key), true);
  progress.pending.set(key, { topic: 'orders-repartition', partition: 3, offset: 50 });
  progress.markCommitted();
  assert.equal(progress.committed.get(key), 50);
  progress.forget(key);
  assert.equal(progress.committed.has(key), false);
});

test('partition keys round-trip topic names with dots and dashes', () => {
  assert.deepEqual(parsePartitionKey(partitionKey('a.b-c_d', 12)), { topic: 'a.b-c_d', partition: 12 });
});
