import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import { createTask } from '../../../src/runtime/task/task.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';
import type { Serde } from '../../../src/serdes/serde.ts';
import type { IncomingRecord, OutgoingRecord } from '../../../src/core/records.ts';
import { PermanentError, RetriableError } from '../../../src/core/stage-errors.ts';
import { TopologyTestDriver } from '../../../src/testing/test-driver.ts';

const noSleep = () => Promise.resolve();

function countTopology() {
  const app = new TopologyBuilder({ appId: 'cnt' });
  app.stream('in', { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'counts' }).toStream().to('out');
  return compile(app);
}

let offset = 0;
function rec(topic: string, key: string | null, value: string | null, timestamp = 0): IncomingRecord {
  return { topic, partition: 0, offset: offset++, key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value), timestamp, headers: [] };
}

function collect() {
  const sent: OutgoingRecord[] = [];
  return { sent, collector: { send: (r: OutgoingRecord) => void sent.push(r) } };
}

test('synchronous stages take the fast path: process returns no promise', () => {
  const task = createTask(countTopology(), 0, 0);
  const { collector } = collect();
  assert.equal(task.process(rec('in', 'a', 'x'), collector), undefined);
});

/** Outputs go to `sent` as records finish; changelog records to `changelog` when the transaction is about to commit. */
function collectWithChangelog() {
  const { sent, collector } = collect();
  const changelog: OutgoingRecord[] = [];
  return { sent, collector, changelog, commitCollector: { send: collector.send, changelog: (r: OutgoingRecord) => void changelog.push(r) } };
}

test('store writes reach the changelog once per key per transaction, at the task partition, with the last value', () => {
  const task = createTask(countTopology(), 0, 3);
  const { sent, collector, changelog, commitCollector } = collectWithChangelog();
  for (const [k, ts] of [['a', 5], ['b', 6], ['a', 7], ['a', 8]] as const) task.process({ ...rec('in', k, 'x', ts), partition: 3 }, collector);
  // every update still goes downstream; none of them to the changelog yet
  assert.deepEqual(sent.map((r) => [r.topic, r.key?.toString(), r.value?.toString()]), [
    ['out', 'a', '1'],
    ['out', 'b', '1'],
    ['out', 'a', '2'],
    ['out', 'a', '3'],
  ]);
  assert.equal(changelog.length, 0);
  task.prepareCommit(commitCollector);
  assert.deepEqual(changelog.map((r) => [r.topic, r.partition, r.key?.toString(), r.value?.toString(), r.timestamp]), [
    ['cnt-counts-changelog', 3, 'a', '3', 8],
    ['cnt-counts-changelog', 3, 'b', '1', 6],
  ]);
  task.commit();
  assert.deepEqual(task.changelogs, [{ store: 'counts', topic: 'cnt-counts-changelog', partition: 3 }]);
});

test('the next transaction logs only the keys it wrote; a rolled-back one logs nothing', () => {
  const task = createTask(countTopology(), 0, 0);
  const { collector, changelog, commitCollector } = collectWithChangelog();
  task.process(rec('in', 'a', 'x'), collector);
  task.process(rec('in', 'b', 'x'), collector);
  task.prepareCommit(commitCollector);
  task.commit();
  changelog.length = 0;
  task.process(rec('in', 'b', 'x'), collector);
  task.rollback();
  task.prepareCommit(commitCollector);
  assert.equal(changelog.length, 0);
  task.process(rec('in', 'b', 'x'), collector);
  task.process(rec('in', 'b', 'x'), collector);
  task.prepareCommit(commitCollector);
  task.commit();
  assert.deepEqual(changelog.map((r) => [r.key?.toString(), r.value?.toString()]), [['b', '3']]);
});

test('rollback restores exactly the last committed state', () => {
  const task = createTask(countTopology(), 0, 0);
  const { collector } = collect();
  task.process(rec('in', 'a', 'x'), collector);
  task.process(rec('in', 'b', 'x'), collector);
  task.commit();
  task.process(rec('in', 'a', 'x'), collector);
  task.process(rec('in', 'c', 'x'), collector);
  assert.equal(task.get('counts', 'a'), 2);
  task.rollback();
  assert.deepEqual(task.entries('counts').sort(), [['a', 1], ['b', 1]]);
  task.process(rec('in', 'a', 'x'), collector);
  assert.equal(task.get('counts', 'a'), 2);
});

test('restore applies changelog records, tombstones included, to a fresh task', () => {
  const compiled = countTopology();
  const first = createTask(compiled, 0, 0);
  const { collector, changelog, commitCollector } = collectWithChangelog();
  for (const k of ['a', 'b', 'a']) first.process(rec('in', k, 'x'), collector);
  first.prepareCommit(commitCollector);
  const next = createTask(compiled, 0, 0);
  for (const r of changelog) next.restore('counts', r.key!, r.value);
  next.restore('counts', Buffer.from('b'), null);
  assert.deepEqual(next.entries('counts'), [['a', 2]]);
  assert.throws(() => next.restore('nope', Buffer.from('a'), null), { code: 'UNKNOWN_STORE' });
});

test('a throwing stage sends the original record to the dead-letter topic with error headers, and leaves no state behind', () => {
  const app = new TopologyBuilder({ appId: 'dl' });
  app
    .stream('in', { key: stringSerde, value: jsonSerde<{ n: number }>() })
    .groupByKey()
    .aggregate(() => 0, (_k, v, agg) => agg + v.n, { state: jsonSerde<number>(), name: 'sum' })
    .toStream()
    .mapValues((total) => {
      if (total > 10) throw new Error('too big');
      return total;
    }, { name: 'check', value: jsonSerde<number>() })
    .to('out');
  const task = createTask(compile(app), 0, 0, { now: () => 1234 });
  const { sent, collector, changelog, commitCollector } = collectWithChangelog();
  task.process(rec('in', 'a', '{"n":5}'), collector);
  task.prepareCommit(commitCollector);
  const bad: IncomingRecord = { ...rec('in', 'a', '{"n":50}', 77), headers: [{ key: 'h', value: Buffer.from('v') }] };
  task.process(bad, collector);
  task.process(rec('in', 'a', '{"n":1}'), collector);
  const dlq = sent.filter((r) => r.topic === 'dl-dlq');
  assert.equal(dlq.length, 1);
  const d = dlq[0]!;
  assert.equal(d.value?.toString(), '{"n":50}');
  assert.equal(d.key?.toString(), 'a');
  assert.equal(d.timestamp, 77);
  const h = Object.fromEntries(d.headers!.map((x) => [x.key, x.value.toString()]));
  assert.equal(h.h, 'v');
  assert.equal(h['onceflow.error.code'], 'UNHANDLED_ERROR');
  assert.equal(h['onceflow.error.message'], 'too big');
  assert.match(h['onceflow.error.stack']!, /Error: too big/);
  assert.equal(h['onceflow.error.attempts'], '1');
  assert.equal(h['onceflow.error.stage'], 'check');
  assert.equal(h['onceflow.error.time'], '1234');
  assert.deepEqual([h['onceflow.source.topic'], h['onceflow.source.partition'], h['onceflow.source.offset']], ['in', '0', String(bad.offset)]);
  // the failed record's aggregate update (and its changelog record) was undone: 5 + 1, not 5 + 50 + 1
  assert.equal(task.get('sum', 'a'), 6);
  assert.deepEqual(sent.filter((r) => r.topic === 'out').map((r) => r.value?.toString()), ['5', '6']);
  task.prepareCommit(commitCollector);
  assert.deepEqual(changelog.map((r) => r.value?.toString()), ['5', '6']);
  assert.equal(task.metrics.deadLettered, 1);
});

test('a RetriableError that succeeds on the second attempt gives exactly one output', async () => {
  let calls = 0;
  const app = new TopologyBuilder({ appId: 'rt', retry: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 4 } });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .mapValues((v) => {
      calls++;
      if (calls === 1) throw new RetriableError('flaky');
      return (v ?? '').toUpperCase();
    })
    .to('out', { value: stringSerde });
  const driver = new TopologyTestDriver(app);
  const r = driver.input<string, string>('in').pipe('k', 'hi');
  assert.ok(r instanceof Promise, 'a retry backs off asynchronously');
  await r;
  assert.deepEqual(driver.output<string, string>('out').readKeyValues(), [['k', 'HI']]);
  assert.equal(calls, 2);
  assert.equal(driver.metrics().retries, 1);
  assert.deepEqual(driver.deadLetters(), []);
});

test('exhausted retries and PermanentError dead-letter the record with the attempt count', async () => {
  const sleeps: number[] = [];
  const app = new TopologyBuilder({ appId: 'rt', retry: { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 150 } });
  app
    .stream('in', { key: stringSerde, value: stringSerde })
    .filter((_k, v) => {
      if (v === 'retry') throw new RetriableError('still down');
      if (v === 'perm') throw new PermanentError('bad input', { code: 'BAD_INPUT' });
      return true;
    }, { name: 'gate' })
    .to('out');
  const driver = new TopologyTestDriver(app, { sleep: (ms) => (sleeps.push(ms), Promise.resolve()), random: () => 1 });
  const input = driver.input<string, string>('in');
  await input.pipe('a', 'retry');
  await input.pipe('b', 'perm');
  await input.pipe('c', 'ok');
  const dl = driver.deadLetters();
  assert.deepEqual(dl.map((d) => [d.code, d.attempts, d.stage, d.message]), [
    ['RETRIES_EXHAUSTED', 3, 'gate', 'still down'],
    ['BAD_INPUT', 1, 'gate', 'bad input'],
  ]);
  // exponential, capped at maxBackoffMs (random() = 1 gives the full backoff)
  assert.deepEqual(sleeps, [100, 150]);
  assert.deepEqual(driver.output('out').readKeyValues(), [['c', 'ok']]);
  assert.equal(driver.compiled.totalRetryBudgetMs(), 2 * (100 + 150));
});

test("unknownErrors: 'retriable' retries plain exceptions", async () => {
  let calls = 0;
  const app = new TopologyBuilder({ appId: 'rt', unknownErrors: 'retriable', retry: { maxAttempts: 2, initialBackoffMs: 0, maxBackoffMs: 0 } });
  app.stream('in', { key: stringSerde, value: stringSerde }).peek(() => {
    if (calls++ === 0) throw new TypeError('transient');
  }).to('out');
  const driver = new TopologyTestDriver(app, { sleep: noSleep });
  await driver.input<string, string>('in').pipe('a', 'x');
  assert.deepEqual(driver.output('out').readKeyValues(), [['a', 'x']]);
});

test('a synchronous stage that returns a Promise at run time raises a typed error pointing to effect', () => {
  const app = new TopologyBuilder({ appId: 'p' });
  // not declared async, so only the run-time check can see it
  app.stream('in', { key: stringSerde, value: stringSerde }).mapValues((v) => Promise.resolve(v), { name: 'sneaky' });
  const task = createTask(compile(app), 0, 0);
  const { sent, collector } = collect();
  assert.throws(() => task.process(rec('in', 'a', 'x'), collector), (e: { code?: string; message: string }) => e.code === 'ASYNC_STAGE_RESULT' && e.message.includes('sneaky') && e.message.includes('effect('));
  assert.deepEqual(sent, []);
});

test('effect stages get an idempotency key that is the same on every replay', async () => {
  const seen: string[] = [];
  const app = new TopologyBuilder({ appId: 'fx' });
  const s = app.stream('in', { key: stringSerde, value: jsonSerde<{ id: string; items: number[] }>() });
  s.effect('by-offset', async (_k, _v, ctx) => void seen.push(`offset:${ctx.idempotencyKey}`)).flatMapValues((v) => v.items).effect('per-item', async (_k, item, ctx) => void seen.push(`item:${item}:${ctx.idempotencyKey}`));
  s.effect('by-id', async (_k, _v, ctx) => void seen.push(`id:${ctx.idempotencyKey}:${ctx.attempt}`), { idempotencyKey: (_k, v) => v.id });
  const driver = new TopologyTestDriver(app, { autoCommit: false });
  const input = driver.input<string, { id: string; items: number[] }>('in');
  await input.pipe('k', { id: 'order-1', items: [1, 2] });
  const first = [...seen];
  assert.deepEqual(first, ['offset:in-0-0', 'item:1:in-0-0', 'item:2:in-0-0#1', 'id:order-1:1']);
  seen.length = 0;
  await driver.abort({ redeliver: true });
  assert.deepEqual(seen, first);
});

test('a serde that needs I/O before decoding makes process async only for that record', async () => {
  let resolved = false;
  const lazy: Serde<string> = {
    name: 'lazy',
    serialize: (v) => Buffer.from(v),
    deserialize: (d) => {
      assert.ok(resolved, 'deserialize runs after resolve settled');
      return d!.toString();
    },
    resolve: () => (resolved ? null : new Promise<void>((r) => setImmediate(() => ((resolved = true), r())))),
  };
  const app = new TopologyBuilder({ appId: 'sr' });
  app.stream('in', { key: stringSerde, value: lazy }).to('out', { value: stringSerde });
  const task = createTask(compile(app), 0, 0);
  const { sent, collector } = collect();
  const p = task.process(rec('in', 'a', 'one'), collector);
  assert.ok(p instanceof Promise);
  assert.throws(() => task.process(rec('in', 'a', 'two'), collector), { code: 'TASK_BUSY' });
  await p;
  assert.equal(task.process(rec('in', 'a', 'three'), collector), undefined);
  assert.deepEqual(sent.map((r) => r.value?.toString()), ['one', 'three']);
});

test('records of topics the task does not read are refused', () => {
  const task = createTask(countTopology(), 0, 0);
  assert.throws(() => task.process(rec('other', 'a', 'x'), collect().collector), { code: 'UNKNOWN_SOURCE_TOPIC' });
  assert.throws(() => createTask(countTopology(), 5, 0), { code: 'UNKNOWN_SUBTOPOLOGY' });
});

test('toDeadLetter routes records of a branch and branches route by first matching predicate', () => {
  const app = new TopologyBuilder({ appId: 'br' });
  const b = app.stream('in', { key: stringSerde, value: jsonSerde<{ n: number }>() }).branch({ neg: (_k, v) => v.n < 0, small: (_k, v) => v.n < 10 }, { default: 'big', name: 'split' });
  b.neg.toDeadLetter({ reason: 'negative amount' });
  b.small.to('small');
  b.big.to('big');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, { n: number }>('in');
  for (const n of [-1, 3, 30]) input.pipe(`k${n}`, { n });
  assert.deepEqual(driver.output('small').readValues(), [{ n: 3 }]);
  assert.deepEqual(driver.output('big').readValues(), [{ n: 30 }]);
  assert.deepEqual(driver.deadLetters().map((d) => [d.code, d.message, d.value?.toString()]), [['ROUTED_TO_DEAD_LETTER', 'negative amount', '{"n":-1}']]);
  assert.match(driver.deadLetters()[0]!.stage, /^KSTREAM-DEADLETTER-\d{10}$/);
  assert.ok(driver.compiled.nodes.has('split-neg'));
});
