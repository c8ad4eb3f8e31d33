import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { tumblingWindow } from '../../src/dsl/windows.ts';
import { compile } from '../../src/graph/compile.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import type { OnceflowError } from '../../src/errors.ts';

const json = jsonSerde<{ id: string; n: number }>();

function expectError(fn: () => unknown, code: string, ...fragments: string[]): OnceflowError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught, `expected ${code} to be thrown`);
  const e = caught as OnceflowError;
  assert.equal(e.code, code, e.message);
  for (const f of fragments) assert.ok(e.message.includes(f), `message ${JSON.stringify(e.message)} should include ${JSON.stringify(f)}`);
  return e;
}

test('an app id with characters Kafka rejects in group ids is refused', () => {
  const app = new TopologyBuilder({ appId: 'bad app!' });
  app.stream('in', { key: stringSerde, value: json }).to('out');
  expectError(() => compile(app), 'INVALID_APP_ID', '"bad app!"', '[a-zA-Z0-9._-]');
  expectError(() => compile(app, { appId: 'x'.repeat(250) }), 'INVALID_APP_ID', '1-249');
  assert.equal(compile(app, { appId: 'good.app_1-x' }).appId, 'good.app_1-x');
});

test('duplicate stage names are refused, naming the stage and the file', () => {
  const app = new TopologyBuilder({ appId: 'a', sourceFile: 'topology/dup.ts' });
  app.stream('in', { key: stringSerde, value: json }).filter(() => true, { name: 'keep' }).filter(() => true, { name: 'keep' }).to('out');
  const e = expectError(() => compile(app), 'DUPLICATE_NODE_NAME', '"keep"', 'node keep', 'in topology/dup.ts');
  assert.equal((e as unknown as { node: string }).node, 'keep');
});

test('a store used by two stages is refused', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  const s = app.stream('in', { key: stringSerde, value: json });
  s.groupByKey().count({ store: 'shared', name: 'c1' });
  s.groupByKey().count({ store: 'shared', name: 'c2' });
  expectError(() => compile(app), 'STORE_USED_BY_MULTIPLE_STAGES', '"shared"', 'stage c1', 'node c2');
});

test('a cycle through topics between sub-topologies is refused', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  app.stream('t1', { key: stringSerde, value: json }).to('t2', { name: 'to-t2' });
  app.stream('t2', { key: stringSerde, value: json }).to('t1', { name: 'to-t1' });
  expectError(() => compile(app), 'TOPOLOGY_CYCLE', 't2 -> t1', 'loop forever');
});

test('a sink writing to its own source is refused', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  app.stream('loop', { key: stringSerde, value: json }).to('loop', { name: 'back' });
  expectError(() => compile(app), 'SINK_TO_OWN_SOURCE', '"loop"', 'node back');
});

test('a stateful stage on a keyless stream is refused until the stream is re-keyed', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  const s = app.stream('in', { value: json });
  s.groupByKey().count({ name: 'counts' });
  expectError(() => compile(app), 'STATEFUL_STAGE_WITHOUT_KEY', 'count', 'no key', 'node counts');

  const ok = new TopologyBuilder({ appId: 'a' });
  ok.stream('in', { value: json }).groupBy((_k, v) => v.id, { key: stringSerde }).count();
  assert.equal(compile(ok).subtopologies.length, 2);

  const lbv = new TopologyBuilder({ appId: 'a' });
  lbv.stream('in', { value: json }).latestByVersion((_k, v) => v.n, { name: 'v' });
  expectError(() => compile(lbv), 'STATEFUL_STAGE_WITHOUT_KEY', 'latestByVersion', 'node v');
});

test('windows with negative size or grace, or an advance larger than the size, are refused', () => {
  const build = (size: number, grace: number, advance?: number) => {
    const app = new TopologyBuilder({ appId: 'a' });
    const w = { ...tumblingWindow(size, { graceMs: grace }), ...(advance !== undefined ? { type: 'hopping' as const, advanceMs: advance } : {}) };
    app.stream('in', { key: stringSerde, value: json }).groupByKey().windowedBy(w).count({ name: 'w' });
    return app;
  };
  expectError(() => compile(build(-1, 0)), 'INVALID_WINDOW', 'size must be a positive', '-1', 'node w');
  expectError(() => compile(build(1000, -5)), 'INVALID_WINDOW', 'grace must be zero or positive', '-5');
  expectError(() => compile(build(1000, 0, 2000)), 'INVALID_WINDOW', 'advance', '2000');
});

test('a missing serde is reported where the stream lost it', () => {
  const sink = new TopologyBuilder({ appId: 'a' });
  sink.stream('in', { key: stringSerde, value: json }).mapValues((v) => v.n, { name: 'to-number' }).to('out', { name: 'write' });
  expectError(() => compile(sink), 'MISSING_SERDE', 'the value of sink topic out', 'node write');

  const repart = new TopologyBuilder({ appId: 'a' });
  repart.stream('in', { key: stringSerde, value: json }).mapValues((v) => v.n).groupBy((_k, n) => String(n), { key: stringSerde }).count({ name: 'by-n' });
  expectError(() => compile(repart), 'MISSING_SERDE', 'a-by-n-repartition', 'pass { value } to groupBy', 'node by-n');

  const key = new TopologyBuilder({ appId: 'a' });
  key.stream('in', { key: stringSerde, value: json }).selectKey((_k, v) => v.n).groupByKey().count({ name: 'c' });
  expectError(() => compile(key), 'MISSING_SERDE', 'grouping key of count', 'node c');

  const reduce = new TopologyBuilder({ appId: 'a' });
  reduce.stream('in', { key: stringSerde, value: json }).mapValues((v) => v.n).groupByKey().reduce((a, b) => a + b, { name: 'r' });
  expectError(() => compile(reduce), 'MISSING_SERDE', 'state of reduce', 'node r');
});

test('async functions in synchronous stages are refused at compile, pointing to effect', () => {
  const app = new TopologyBuilder({ appId: 'a' });
  app.stream('in', { key: stringSerde, value: json }).mapValues(async (v) => v.n, { name: 'slow' });
  expectError(() => compile(app), 'ASYNC_STAGE_FUNCTION', 'mapValues function is async', 'effect(name, fn', 'node slow');
  const f = new TopologyBuilder({ appId: 'a' });
  f.stream('in', { key: stringSerde, value: json }).filter((async () => true) as unknown as () => boolean);
  expectError(() => compile(f), 'ASYNC_STAGE_FUNCTION', 'filter function is async');
});

test('other option errors: duplicate source topics, bad topic names, empty topologies, bad ttl and retry policy', () => {
  const dup = new TopologyBuilder({ appId: 'a' });
  dup.stream('in', { key: stringSerde, value: json });
  dup.stream('in', { key: stringSerde, value: json });
  expectError(() => compile(dup), 'DUPLICATE_SOURCE_TOPIC', '"in"');

  const bad = new TopologyBuilder({ appId: 'a' });
  bad.stream('in', { key: stringSerde, value: json }).to('no spaces');
  expectError(() => compile(bad), 'INVALID_TOPIC_NAME', '"no spaces"');

  expectError(() => compile(new TopologyBuilder({ appId: 'a' })), 'EMPTY_TOPOLOGY', 'no source stream');

  const ttl = new TopologyBuilder({ appId: 'a' });
  ttl.stream('in', { key: stringSerde, value: json }).dedupe((_k, v) => v.id, { ttlMs: 0, name: 'd' });
  expectError(() => compile(ttl), 'INVALID_STAGE_OPTION', 'ttlMs', 'node d');

  const retry = new TopologyBuilder({ appId: 'a', retry: { maxAttempts: 0 } });
  retry.stream('in', { key: stringSerde, value: json });
  expectError(() => compile(retry), 'INVALID_STAGE_OPTION', 'maxAttempts');
});
