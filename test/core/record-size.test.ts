import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { DEAD_LETTER_EXCERPT_BYTES, maxRecordBytesFor } from '../../src/core/record-size.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

const LIMIT = maxRecordBytesFor();

test('an output larger than one produce may carry dead-letters its input record; the records around it go on', () => {
  const app = new TopologyBuilder({ appId: 'sizes' });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .mapValues((v) => (v === 'inflate' ? 'x'.repeat(LIMIT) : (v ?? '').toUpperCase()))
    .to('out', { key: stringSerde, value: stringSerde });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('in');
  input.pipe('k', 'a');
  input.pipe('k', 'inflate');
  input.pipe('k', 'b');
  assert.deepEqual(driver.output<string, string>('out').readValues(), ['A', 'B']);
  const [dead, ...more] = driver.deadLetters();
  assert.equal(more.length, 0);
  assert.equal(dead?.code, 'RECORD_TOO_LARGE');
  assert.equal(dead?.value?.toString(), 'inflate', 'the original input, not the oversized output');
  assert.match(dead?.message ?? '', /for topic out is over the \d+ bytes/);
});

test("a store value whose changelog record could not be produced fails the record that wrote it, and the store keeps its last good value", () => {
  const app = new TopologyBuilder({ appId: 'growing' });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .groupByKey()
    .aggregate(() => '', (_k, v, acc) => acc + v, { state: jsonSerde<string>(), name: 'joined' })
    .toStream()
    .mapValues((s) => s.length)
    .to('lengths', { key: stringSerde, value: jsonSerde<number>() });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, string>('in');
  const third = 'y'.repeat(Math.ceil(LIMIT / 3));
  input.pipe('k', third);
  input.pipe('k', third);
  input.pipe('k', third); // the joined value would now be over the limit
  input.pipe('other', 'z');
  assert.deepEqual(driver.output<string, number>('lengths').readKeyValues(), [
    ['k', third.length],
    ['k', 2 * third.length],
    ['other', 1],
  ]);
  assert.deepEqual(
    driver.deadLetters().map((d) => d.code),
    ['RECORD_TOO_LARGE'],
  );
  assert.equal(driver.store<string, string>('joined').get('k')?.length, 2 * third.length);
});

test("the driver dead-letters a record over a topic's max.message.bytes as a bounded excerpt, with its coordinates and full size", () => {
  const app = new TopologyBuilder({ appId: 'topic-limit' });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .mapValues((v) => v)
    .to('out', { key: stringSerde, value: stringSerde });
  const driver = new TopologyTestDriver(app, { topicMaxMessageBytes: { out: 100_000 } });
  const input = driver.input<string, string>('in');
  input.pipe('k', 'a');
  input.pipe('k', 'y'.repeat(200_000));
  input.pipe('k', 'b');
  assert.deepEqual(driver.output<string, string>('out').readValues(), ['a', 'b']);
  const [dead, ...more] = driver.deadLetters();
  assert.equal(more.length, 0);
  assert.equal(dead?.code, 'RECORD_TOO_LARGE');
  assert.deepEqual(dead?.source, { topic: 'in', partition: 0, offset: 1 });
  assert.equal(dead?.value?.length, DEAD_LETTER_EXCERPT_BYTES);
  assert.deepEqual(dead?.excerpt, { keyBytes: 1, valueBytes: 200_000 });
  assert.match(dead?.message ?? '', /topic out's max\.message\.bytes \(100000\)/);
});

test('a dead letter the dead-letter topic cannot take even as an excerpt stops the driver with RECORD_TOO_LARGE', () => {
  const app = new TopologyBuilder({ appId: 'tiny-dlq' });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .mapValues((v) => v)
    .to('out', { key: stringSerde, value: stringSerde });
  const dlq = new TopologyTestDriver(app).compiled.deadLetterTopic;
  const strict = new TopologyTestDriver(app, { topicMaxMessageBytes: { out: 1000, [dlq]: 1000 } });
  assert.throws(() => strict.input<string, string>('in').pipe('k', 'z'.repeat(5000)), (e: unknown) => (e as { code?: unknown }).code === 'RECORD_TOO_LARGE' && (e as Error).message.includes(dlq));
});
