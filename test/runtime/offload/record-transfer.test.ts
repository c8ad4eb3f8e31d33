import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OutgoingRecord } from '../../../src/core/records.ts';
import { forEachOutput, packOutputs, packRun, unpackRun } from '../../../src/runtime/offload/record-transfer.ts';

test('a packed run unpacks to the same records: null and empty keys and values, headers and lineage kept apart', () => {
  const records = [
    { offset: 7, timestamp: 1_000, key: Buffer.from('k1'), value: Buffer.from('{"a":1}'), headers: [], lineage: undefined },
    { offset: 8, timestamp: 1_001, key: null, value: Buffer.alloc(0), headers: [{ key: 'trace', value: Buffer.from([0, 255, 1]) }], lineage: 'in/0/3#0' },
    { offset: 9, timestamp: 1_002, key: Buffer.alloc(0), value: null, headers: [], lineage: undefined },
  ];
  const run = packRun('orders', 4, records);
  const back = unpackRun(structuredClone(run));
  assert.equal(back.length, 3);
  for (const [i, r] of back.entries()) {
    const original = records[i]!;
    assert.equal(r.topic, 'orders');
    assert.equal(r.partition, 4);
    assert.equal(r.offset, original.offset);
    assert.equal(r.timestamp, original.timestamp);
    assert.deepEqual(r.key, original.key);
    assert.deepEqual(r.value, original.value);
    assert.deepEqual(r.headers, original.headers);
    assert.equal(r.lineage, original.lineage);
  }
  assert.ok(Buffer.isBuffer(back[0]!.key) && Buffer.isBuffer(back[1]!.headers[0]!.value), 'keys, values and header values are Buffers again');
});

test('packed outputs come back in order with their input index; partition, timestamp and headers only where they were set', () => {
  const outputs: OutgoingRecord[] = [
    { topic: 'out', key: Buffer.from('a'), value: Buffer.from('1') },
    { topic: 'dlq', partition: 2, key: null, value: Buffer.from('bad'), timestamp: 5, headers: [{ key: 'onceflow.error.code', value: Buffer.from('JSON_INVALID') }] },
    { topic: 'out', key: Buffer.from('b'), value: null, timestamp: 0 },
  ];
  const packed = structuredClone(packOutputs(outputs, [0, 0, 3]));
  const seen: [OutgoingRecord, number][] = [];
  forEachOutput(packed, (output, input) => seen.push([output, input]));
  assert.deepEqual(seen.map(([, input]) => input), [0, 0, 3]);
  assert.deepEqual(seen.map(([o]) => o), outputs);
});
