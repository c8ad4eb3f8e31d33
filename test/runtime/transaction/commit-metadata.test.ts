import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCommitMetadata, parseCommitMetadata } from '../../../src/runtime/transaction/commit-metadata.ts';

test('commit metadata round-trips, with or without the NUL librdkafka stores', () => {
  const m = { by: 'orders-pod-1', at: 1_796_279_210_252 };
  assert.deepEqual(parseCommitMetadata(formatCommitMetadata(m)), m);
  assert.deepEqual(parseCommitMetadata(`${formatCommitMetadata(m)}\u0000`), m);
});

test('the stream time travels with the offset, and only when the task has one', () => {
  const m = { by: 'word-count-0', at: 1_796_279_210_252, streamTime: 1_796_279_000_000 };
  assert.deepEqual(parseCommitMetadata(`${formatCommitMetadata(m)}\u0000`), m);
  assert.equal(formatCommitMetadata({ ...m, streamTime: Number.NEGATIVE_INFINITY }).includes('st='), false);
  assert.deepEqual(parseCommitMetadata('onceflow:v1;by=x;at=12;st=later'), { by: 'x', at: 12 });
});

test('metadata from other committers is not ours', () => {
  for (const raw of [undefined, null, '', 'some-tool', 'onceflow:v1;by=x', 'onceflow:v1;at=12', 'onceflow:v1;by=x;at=soon']) {
    assert.equal(parseCommitMetadata(raw), undefined, String(raw));
  }
});
