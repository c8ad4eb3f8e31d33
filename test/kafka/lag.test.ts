import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordsBehind } from '../../src/kafka/lag.ts';

test('recordsBehind: the end minus the next offset, the markers before the first readable record not counted', () => {
  assert.equal(recordsBehind(2, 6), 4, 'nobody looked: every offset counts');
  assert.equal(recordsBehind(7, 8, null), 0, 'only a commit marker left: caught up');
  assert.equal(recordsBehind(10, 40, null), 0, 'only aborted records and their marker left: caught up');
  assert.equal(recordsBehind(7, 12, 9), 3, 'two markers before the next record are skipped');
  assert.equal(recordsBehind(7, 12, 7), 5);
  assert.equal(recordsBehind(9, 6), 0, 'never negative');
});
