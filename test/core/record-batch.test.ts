import assert from 'node:assert/strict';
import test from 'node:test';
import { RECORD_BATCH, RecordBatchWriter, isRecordBatch, recordPosition, unpackRecordBatch, type BatchedRecord } from '../../src/core/record-batch.ts';

const records: BatchedRecord[] = [
  { key: Buffer.from('alpha'), value: Buffer.from('{"n":1}'), timestamp: 1_764_000_000_123, lineage: 'orders/2/17#0', headers: undefined },
  { key: null, value: Buffer.from('no key'), timestamp: 5, lineage: 'orders/2/18#0.1', headers: [{ key: 'trace-ïd', value: Buffer.from([0, 255, 7]) }] },
  { key: Buffer.from('tomb'), value: null, timestamp: 0, lineage: undefined, headers: [] },
  { key: Buffer.alloc(0), value: Buffer.alloc(0), timestamp: 42, lineage: '', headers: [{ key: 'a', value: Buffer.alloc(0) }, { key: 'b', value: Buffer.from('x') }] },
];

test('a batch unpacks to the records written into it, in order, with the message coordinates and their place', () => {
  const writer = new RecordBatchWriter();
  for (const r of records) writer.add(r);
  assert.equal(writer.count, 4);
  assert.equal(writer.firstTimestamp, records[0]!.timestamp);
  assert.equal(writer.bytes, records.reduce((sum, r) => sum + RecordBatchWriter.sizeOf(r), 0));
  const value = Buffer.from(writer.take());
  assert.equal(writer.count, 0);
  const unpacked = unpackRecordBatch({ topic: 'app-repartition', partition: 3, offset: 90, value });
  assert.equal(unpacked.length, records.length);
  unpacked.forEach((r, index) => {
    const written = records[index]!;
    assert.equal(r.topic, 'app-repartition');
    assert.equal(r.partition, 3);
    assert.equal(r.offset, 90);
    assert.equal(r.index, index);
    assert.deepEqual(r.key, written.key);
    assert.deepEqual(r.value, written.value);
    assert.equal(r.timestamp, written.timestamp);
    assert.equal(r.lineage, written.lineage);
    assert.deepEqual(r.headers.map((h) => [h.key, [...h.value]]), (written.headers ?? []).map((h) => [h.key, [...h.value]]));
  });
});

test('a writer grows past its first buffer and is reused after take', () => {
  const writer = new RecordBatchWriter();
  const big = { key: Buffer.from('k'), value: Buffer.alloc(40_000, 1), timestamp: 1, lineage: 'x/0/0#0', headers: undefined };
  writer.add(big);
  writer.add(big);
  assert.equal(unpackRecordBatch({ topic: 't', partition: 0, offset: 0, value: Buffer.from(writer.take()) }).length, 2);
  writer.add(records[0]!);
  const again = unpackRecordBatch({ topic: 't', partition: 0, offset: 1, value: Buffer.from(writer.take()) });
  assert.deepEqual(again.map((r) => r.key?.toString()), ['alpha']);
});

test('only a message whose one header is the batch marker is a batch', () => {
  assert.equal(isRecordBatch([{ [RECORD_BATCH.header]: RECORD_BATCH.version }]), true);
  assert.equal(isRecordBatch(undefined), false);
  assert.equal(isRecordBatch([]), false);
  assert.equal(isRecordBatch([{ 'onceflow.lineage': 'a/0/0#0' }]), false);
  assert.equal(isRecordBatch([{ [RECORD_BATCH.header]: '1' }, { other: 'x' }]), false);
});

test('positions of batched and plain records of one partition never coincide', () => {
  const seen = new Set<number>();
  for (let offset = 0; offset < 5; offset++) {
    seen.add(recordPosition({ offset }));
    for (let index = 0; index < 4095; index++) seen.add(recordPosition({ offset, index }));
  }
  assert.equal(seen.size, 5 * 4096);
});
