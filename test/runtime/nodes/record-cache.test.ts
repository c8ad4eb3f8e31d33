import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import { createTask } from '../../../src/runtime/task/task.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord } from '../../../src/core/records.ts';
import { TopologyTestDriver } from '../../../src/testing/test-driver.ts';
import { wordCountTopology } from '../../../topology/word-count.ts';

function sumApp(check?: (total: number) => number) {
  const app = new TopologyBuilder({ appId: 'rc' });
  const totals = app
    .stream('in', { key: stringSerde, value: jsonSerde<number>() })
    .groupByKey()
    .aggregate(() => 0, (_k, v, s) => s + v, { state: jsonSerde<number>(), name: 'sum' })
    .toStream();
  (check ? totals.mapValues(check, { name: 'check', value: jsonSerde<number>() }) : totals).to('out', { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

let offset = 0;
function rec(key: string, n: number, timestamp = 0): IncomingRecord {
  return { topic: 'in', partition: 0, offset: offset++, key: Buffer.from(key), value: Buffer.from(JSON.stringify(n)), timestamp, headers: [{ key: 'h', value: Buffer.from(`h${n}`) }] };
}

function collect() {
  const sent: OutgoingRecord[] = [];
  const changelog: OutgoingRecord[] = [];
  const out: CommitCollector = { send: (r) => void sent.push(r), changelog: (r) => void changelog.push(r) };
  const view = (topic: string) => sent.filter((r) => r.topic === topic).map((r) => [r.key?.toString(), r.value?.toString(), r.source?.offset, r.timestamp]);
  return { sent, changelog, out, view };
}

test('with the cache on, an aggregate sends the last result per key at the commit, on behalf of the record that made it', () => {
  const task = createTask(compile(sumApp()), 0, 0, { cache: { maxRecords: 100 } });
  const { sent, changelog, out, view } = collect();
  const rs = [rec('a', 1, 10), rec('b', 5, 11), rec('a', 2, 12), rec('a', 3, 13)];
  for (const r of rs) assert.equal(task.process(r, out), undefined);
  assert.equal(sent.length, 0);
  assert.equal(task.get('sum', 'a'), 6);
  task.prepareCommit(out);
  assert.deepEqual(view('out'), [
    ['b', '5', rs[1]!.offset, 11],
    ['a', '6', rs[3]!.offset, 13],
  ]);
  // the headers are those of the record that made the result
  assert.deepEqual(sent.find((r) => r.key?.toString() === 'a')?.headers?.map((h) => h.value.toString()), ['h3']);
  assert.deepEqual(changelog.map((r) => [r.key?.toString(), r.value?.toString()]), [['a', '6'], ['b', '5']]);
  task.commit();
  sent.length = 0;
  task.prepareCommit(out);
  assert.equal(sent.length, 0, 'a commit releases each result once');
});

test('past cacheMaxRecords keys the least recently updated result goes downstream at once', () => {
  const task = createTask(compile(sumApp()), 0, 0, { cache: { maxRecords: 2 } });
  const { out, view } = collect();
  const rs = [rec('a', 1), rec('b', 1), rec('a', 1), rec('c', 1)];
  for (const r of rs) task.process(r, out);
  // a was updated after b, so b is the coldest when c makes three
  assert.deepEqual(view('out'), [['b', '1', rs[1]!.offset, 0]]);
  task.prepareCommit(out);
  assert.deepEqual(view('out'), [
    ['b', '1', rs[1]!.offset, 0],
    ['a', '2', rs[2]!.offset, 0],
    ['c', '1', rs[3]!.offset, 0],
  ]);
});

test('a dead-lettered record leaves no cached result; a rollback drops every cached result', () => {
  const app = new TopologyBuilder({ appId: 'rc' });
  app
    .stream('in', { key: stringSerde, value: jsonSerde<number>() })
    .groupByKey()
    .aggregate(
      () => 0,
      (_k, v, s) => {
        if (v < 0) throw new Error('negative');
        return s + v;
      },
      { state: jsonSerde<number>(), name: 'sum' },
    )
    .toStream()
    .to('out', { key: stringSerde, value: jsonSerde<number>() });
  const task = createTask(compile(app), 0, 0, { cache: { maxRecords: 10 } });
  const { out, view } = collect();
  const good = rec('a', 4);
  task.process(good, out);
  task.process(rec('a', -1), out);
  assert.equal(view('rc-dlq').length, 1);
  task.prepareCommit(out);
  assert.deepEqual(view('out'), [['a', '4', good.offset, 0]]);
  task.commit();

  const { sent, out: out2 } = collect();
  task.process(rec('b', 1), out2);
  task.rollback();
  task.prepareCommit(out2);
  assert.equal(sent.length, 0);
});

test('a stage after a cached aggregate that fails on a released result dead-letters the record behind it; the store keeps it', () => {
  const task = createTask(
    compile(
      sumApp((total) => {
        if (total > 10) throw new Error('too big');
        return total;
      }),
    ),
    0,
    0,
    { cache: { maxRecords: 10 } },
  );
  const { out, view } = collect();
  const last = rec('a', 8);
  task.process(rec('a', 5), out);
  task.process(last, out);
  task.prepareCommit(out);
  assert.equal(view('out').length, 0);
  const dlq = view('rc-dlq');
  assert.equal(dlq.length, 1);
  assert.equal(dlq[0]![2], last.offset);
  assert.equal(task.get('sum', 'a'), 13);
  assert.equal(task.metrics.deadLettered, 1);
});

test('the driver with the cache: one output per key per commit, the same final counts as without it', () => {
  const lines = ['a b a', 'b c', 'a'];
  const run = (opts: { cacheMaxRecords?: number; autoCommit?: boolean }) => {
    const driver = new TopologyTestDriver(wordCountTopology(), { partitions: 2, ...opts });
    const input = driver.input<string, string>('lines');
    lines.forEach((l, i) => input.pipe(`l${i}`, l));
    if (opts.autoCommit === false) driver.commit();
    return driver.output<string, number>('word-counts').readKeyValues();
  };
  const every = run({});
  assert.equal(every.length, 6);
  const cached = run({ cacheMaxRecords: 100, autoCommit: false });
  assert.deepEqual(cached.sort(), [['a', 3], ['b', 2], ['c', 1]]);
  assert.deepEqual(new Map(cached), new Map(every));
  // a commit per piped line still folds the updates the line's words make downstream in one transaction
  const perLine = run({ cacheMaxRecords: 100 });
  assert.ok(perLine.length < every.length);
  assert.deepEqual(new Map(perLine), new Map(every));
});

/** A per-key tally an aggregator changes in place, as plain JavaScript invites; it throws on a negative amount after changing it. */
function tallyApp() {
  const app = new TopologyBuilder({ appId: 'rc-tally' });
  const totals = app
    .stream('in', { key: stringSerde, value: jsonSerde<number>() })
    .groupByKey()
    .aggregate(
      () => ({ sum: 0, count: 0 }),
      (_k, v, t) => {
        t.sum += v;
        t.count += 1;
        if (v < 0) throw new Error('negative amount');
        return t;
      },
      { state: jsonSerde<{ sum: number; count: number }>(), name: 'tally' },
    )
    .toStream();
  totals
    .mapValues(
      (t) => {
        // a downstream stage that changes the object it is handed: the store must not see it
        t.sum = -1;
        return t;
      },
      { name: 'vandal', value: jsonSerde<{ sum: number; count: number }>() },
    )
    .to('out', { key: stringSerde, value: jsonSerde<{ sum: number; count: number }>() });
  return app;
}

test('an aggregate kept decoded within a transaction: a failed in-place change and a downstream change leave store and output right', () => {
  const task = createTask(compile(tallyApp()), 0, 0, { cache: { maxRecords: 100 } });
  const { changelog, out, sent } = collect();
  const outputs = () => sent.filter((r) => r.topic === 'out').map((r) => r.value?.toString());
  for (const r of [rec('a', 1), rec('a', 2), rec('a', -50)]) task.process(r, out);
  assert.deepEqual(task.get('tally', 'a'), { sum: 3, count: 2 }, 'the failed record changed nothing');
  task.prepareCommit(out);
  assert.deepEqual(changelog.map((r) => r.value?.toString()), ['{"sum":3,"count":2}']);
  assert.deepEqual(outputs(), ['{"sum":-1,"count":2}'], 'the held-back result is the one before the failed record');
  task.commit();
  sent.length = 0;
  changelog.length = 0;
  // within one transaction: a failure between updates, and the released object changed downstream at the commit
  for (const r of [rec('a', 10), rec('a', -1), rec('a', 20)]) task.process(r, out);
  assert.deepEqual(task.get('tally', 'a'), { sum: 33, count: 4 });
  task.prepareCommit(out);
  task.commit();
  task.process(rec('a', 1), out);
  sent.length = 0;
  changelog.length = 0;
  task.prepareCommit(out);
  assert.deepEqual(changelog.map((r) => r.value?.toString()), ['{"sum":34,"count":5}']);
  assert.deepEqual(outputs(), ['{"sum":-1,"count":5}']);
});
