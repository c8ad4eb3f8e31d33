import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecordSizeLimits } from '../../src/core/record-size.ts';
import { checkRecordSizes, ProduceRecordTooLargeError } from '../../src/cli/produce-limits.ts';

const record = (bytes: number) => ({ key: Buffer.from('k'), value: Buffer.alloc(bytes - 1), headers: [] });

test('the first record over the tighter limit is named by its line, with the limit that binds and how to raise it', () => {
  const lines = [{ lineNumber: 1, record: record(10) }, { lineNumber: 3, record: record(2_000_000) }, { lineNumber: 4, record: record(3_000_000) }];
  assert.throws(
    () => checkRecordSizes('t', lines, new RecordSizeLimits(1_000_000, { t: 1_048_588 })),
    (e: unknown) => e instanceof ProduceRecordTooLargeError && e.code === 'RECORD_TOO_LARGE' && e.lineNumber === 3 && /^line 3: 2,000,000 bytes, over the producer's message\.max\.bytes 1,000,000 .*raise it with --max-message-bytes, up to the topic's max\.message\.bytes 1,048,588/.test(e.message),
  );
  assert.throws(
    () => checkRecordSizes('t', lines, new RecordSizeLimits(4_000_000, { t: 1_048_588 })),
    (e: unknown) => e instanceof ProduceRecordTooLargeError && /^line 3: 2,000,000 bytes, over max\.message\.bytes 1,048,588 of topic t /.test(e.message),
  );
  assert.doesNotThrow(() => checkRecordSizes('t', lines.slice(0, 2), new RecordSizeLimits(4_000_000, { t: 4_000_000 })));
});

test('a topic whose limit is not known is held to the producer\'s alone', () => {
  assert.doesNotThrow(() => checkRecordSizes('t', [{ lineNumber: 1, record: record(900_000) }], new RecordSizeLimits()));
  assert.throws(() => checkRecordSizes('t', [{ lineNumber: 7, record: record(999_900) }], new RecordSizeLimits()), /line 7: 999,900 bytes/);
});
