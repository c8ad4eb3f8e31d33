import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Message } from '@confluentinc/kafka-javascript';
import { TimeOrderedBatch } from '../../../src/runtime/loop/batch-order.ts';

const message = (partition: number, offset: number, timestamp: number): Message => ({ topic: 't', partition, offset, timestamp, value: null, size: 0 });

function order(batch: Message[]): string[] {
  const ordered = new TimeOrderedBatch(batch);
  const out: string[] = [];
  for (let s = ordered.next(); s !== undefined; s = ordered.next()) for (let i = s.from; i < s.to; i++) out.push(`${s.run.partition}@${s.run.messages[i]!.offset}`);
  return out;
}

test('partitions handed over one after the other are merged by timestamp', () => {
  const batch = [message(0, 0, 10), message(0, 1, 20), message(0, 2, 30), message(1, 0, 15), message(1, 1, 25), message(1, 2, 35)];
  assert.deepEqual(order(batch), ['0@0', '1@0', '0@1', '1@1', '0@2', '1@2']);
});

test("a partition's own order is kept even when its timestamps go back", () => {
  const batch = [message(0, 0, 50), message(0, 1, 5), message(1, 0, 10)];
  // 0@1 (ts 5) cannot pass 0@0 (ts 50): the merge compares heads only.
  assert.deepEqual(order(batch), ['1@0', '0@0', '0@1']);
});

test('records of one partition split over the batch stay one run, in fetch order', () => {
  const batch = [message(0, 0, 1), message(1, 0, 100), message(0, 1, 2), message(0, 2, 3)];
  const ordered = new TimeOrderedBatch(batch);
  assert.equal(ordered.runs.length, 2);
  const first = ordered.next()!;
  assert.deepEqual([first.run.partition, first.from, first.to], [0, 0, 3], 'one slice while it stays older than the other head');
  assert.deepEqual(order(batch), ['0@0', '0@1', '0@2', '1@0']);
});

test('equal timestamps go in fetch order', () => {
  assert.deepEqual(order([message(2, 7, 5), message(1, 3, 5), message(2, 8, 5)]), ['2@7', '2@8', '1@3']);
});
