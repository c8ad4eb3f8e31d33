import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IncomingRecord } from '../../src/core/records.ts';
import { compareLiveOutput } from '../../src/verify/live-output.ts';

const out = (partition: number, offset: number, lineage: string): IncomingRecord => ({ topic: 'out', partition, offset, key: null, value: Buffer.from('v'), timestamp: 0, headers: [], lineage });

const committed = [out(0, 0, 'in/0/0#0'), out(0, 1, 'in/0/0#1'), out(0, 3, 'in/0/1#0'), out(1, 0, 'in/1/0#0')];

test('a reader given exactly the committed records, in log order, is clean', () => {
  const report = compareLiveOutput(committed, committed);
  assert.deepEqual({ ...report, examples: undefined }, { records: 4, duplicates: 0, outOfOrder: 0, aborted: 0, skipped: 0, notReached: 0, examples: undefined });
});

test('an aborted record, a duplicate lineage, a skipped record and a sibling out of order are each counted', () => {
  const seen = [
    out(0, 1, 'in/0/0#1'), // skips offset 0, and gives output 1 of in/0/0 before output 0
    out(0, 2, 'in/0/9#0'), // not committed: from an aborted transaction
    out(0, 3, 'in/0/1#0'),
    out(1, 0, 'in/1/0#0'),
    out(1, 1, 'in/1/0#0'), // the same lineage again
  ];
  const report = compareLiveOutput(seen, [...committed, out(1, 1, 'in/1/0#0')]);
  assert.equal(report.aborted, 1);
  assert.equal(report.duplicates, 1);
  assert.equal(report.skipped, 1);
  const reordered = compareLiveOutput([committed[1]!, committed[0]!], committed);
  assert.equal(reordered.outOfOrder, 2, 'an offset going back and a sibling given before its predecessor');
});

test('committed records past where the reader stopped count as not reached, not as skipped', () => {
  const report = compareLiveOutput([committed[0]!], committed);
  assert.deepEqual({ skipped: report.skipped, notReached: report.notReached }, { skipped: 0, notReached: 3 });
});
