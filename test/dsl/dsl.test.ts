import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder, isTopologyBuilder } from '../../src/dsl/topology-builder.ts';
import type { Stream } from '../../src/dsl/stream.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';
import { compile } from '../../src/graph/index.ts';

interface Order {
  id: string;
  amount: number;
}

test('types flow through the stages (checked by tsc)', () => {
  const app = new TopologyBuilder({ appId: 'types' });
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<Order>() });
  const amounts: Stream<string | null, number> = orders.mapValues((o) => o.amount);
  const byId: Stream<string, Order> = orders.selectKey((_k, o) => o.id, { key: stringSerde });
  const pairs: Stream<number, string> = orders.map((_k, o) => [o.amount, o.id] as const);
  void amounts;
  void byId;
  void pairs;
  // @ts-expect-error mapValues returns the new value type, not the old one
  const wrong: Stream<string | null, Order> = orders.mapValues((o) => o.amount);
  void wrong;
  // never called: these lines exist for the type checker only
  const typeErrors = () => {
    // @ts-expect-error grouping by a new key requires its serde
    orders.groupBy((_k, o) => o.id);
    // @ts-expect-error aggregating to a new state type requires a state serde
    orders.groupByKey().aggregate(() => 0, (_k, o, sum) => sum + o.amount, {});
    // @ts-expect-error a key serde of another type is refused
    orders.groupBy((_k, o) => o.amount, { key: stringSerde });
  };
  void typeErrors;
  const keyless = app.stream('lines', { value: stringSerde });
  const k: Stream<null, string | null> = keyless;
  void k;
  assert.ok(isTopologyBuilder(app));
  assert.equal(isTopologyBuilder({}), false);
});

test('streams are immutable handles: one stream can feed several independent pipelines', () => {
  const app = new TopologyBuilder({ appId: 'fan' });
  const s = app.stream('in', { key: stringSerde, value: jsonSerde<Order>() });
  s.filter((_k, o) => o.amount > 10).to('big');
  s.filterNot((_k, o) => o.amount > 10).to('small');
  s.mapValues((o) => o.amount * 2, { value: jsonSerde<number>() }).to('doubled');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, Order>('in');
  input.pipe('a', { id: 'a', amount: 5 });
  input.pipe('b', { id: 'b', amount: 50 });
  assert.deepEqual(driver.output('big').readKeyValues(), [['b', { id: 'b', amount: 50 }]]);
  assert.deepEqual(driver.output('small').readKeyValues(), [['a', { id: 'a', amount: 5 }]]);
  assert.deepEqual(driver.output('doubled').readValues(), [10, 100]);
});

test('map, flatMap, flatMapValues, merge and peek', () => {
  const app = new TopologyBuilder({ appId: 'ops' });
  const seen: string[] = [];
  const a = app.stream('a', { key: stringSerde, value: stringSerde });
  const b = app.stream('b', { key: stringSerde, value: stringSerde });
  a.merge(b)
    .peek((k, v) => void seen.push(`${k}=${v}`))
    .flatMap<string, string>((k, v) => [[`${k}1`, v ?? ""] as const, [`${k}2`, `${v}!`] as const], { key: stringSerde, value: stringSerde })
    .flatMapValues((v) => (v.endsWith('!') ? [v] : []))
    .map((k, v) => [v, k] as const, { key: stringSerde, value: stringSerde })
    .to('out');
  const driver = new TopologyTestDriver(app);
  driver.input<string, string>('a').pipe('x', 'p');
  driver.input<string, string>('b').pipe('y', 'q');
  assert.deepEqual(driver.output('out').readKeyValues(), [['p!', 'x2'], ['q!', 'y2']]);
  assert.deepEqual(seen, ['x=p', 'y=q']);
});

test('a keyless stream can be written without a key serde; re-keyed it can be aggregated', () => {
  const app = new TopologyBuilder({ appId: 'kl' });
  const lines = app.stream('lines', { value: stringSerde });
  lines.to('copy', { value: stringSerde });
  lines.groupBy((_k, v) => v, { key: stringSerde }).count({ name: 'c' }).toStream().to('counts');
  const driver = new TopologyTestDriver(app);
  driver.input<null, string>('lines').pipe(null, 'hi');
  driver.input<null, string>('lines').pipe(null, 'hi');
  assert.deepEqual(driver.output('copy').readKeyValues(), [[null, 'hi'], [null, 'hi']]);
  assert.deepEqual(driver.output('counts').readKeyValues(), [['hi', 1], ['hi', 2]]);
});

test('records with a null key are dropped (and counted) at stateful stages', () => {
  const app = new TopologyBuilder({ appId: 'nk' });
  app.stream('in', { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'c' }).toStream().to('out');
  const driver = new TopologyTestDriver(app);
  driver.input<string | null, string>('in').pipe(null, 'x');
  assert.equal(driver.output('out').isEmpty(), true);
  assert.equal(driver.metrics().nullKeysDropped, 1);
});

test('reduce keeps the first value and folds the rest', () => {
  const app = new TopologyBuilder({ appId: 'r' });
  app.stream('in', { key: stringSerde, value: jsonSerde<number>() }).groupByKey().reduce((a, b) => Math.max(a, b), { name: 'max' }).toStream().to('out');
  const driver = new TopologyTestDriver(app);
  for (const n of [3, 9, 4]) driver.input<string, number>('in').pipe('k', n);
  assert.deepEqual(driver.output('out').readValues(), [3, 9, 9]);
});

test('every stage function that sees the key gets (key, value, ...extra); mapValues and flatMapValues get the value alone (and the record context)', async () => {
  // The engine stores stage functions with unknown parameters, so only running them shows the order it passes.
  const calls: Record<string, unknown[]> = {};
  const spy = <R>(name: string, result: R) => (...args: unknown[]): R => {
    calls[name] = args.map((a) => (typeof a === 'object' && a !== null && ('idempotencyKey' in a || 'headers' in a) ? 'ctx' : a));
    return result;
  };
  const app = new TopologyBuilder({ appId: 'order-of-args' });
  const s = app.stream('in', { key: stringSerde, value: stringSerde, timestamp: spy('timestamp', 7) });
  const kept = s
    .filter(spy('filter', true))
    .filterNot(spy('filterNot', false))
    .peek(spy('peek', undefined))
    .dedupe(spy('dedupe', 'id'), { ttlMs: 1_000 })
    .latestByVersion(spy('latestByVersion', 1))
    .effect('fx', spy('effect', Promise.resolve()), { idempotencyKey: spy('idempotencyKey', 'ik') })
    .branch({ only: spy('branch', true) }).only.mapValues(spy('mapValues', 'v2'))
    .flatMapValues(spy('flatMapValues', ['v3']))
    .selectKey(spy('selectKey', 'k2'), { key: stringSerde })
    .map(spy<readonly [string, string]>('map', ['k3', 'v4']), { key: stringSerde, value: stringSerde })
    .flatMap(spy<(readonly [string, string])[]>('flatMap', [['k4', 'v5']]), { key: stringSerde, value: stringSerde });
  kept.groupBy(spy('groupBy', 'g'), { key: stringSerde }).aggregate(() => 'init', spy('aggregate', 'agg'), { state: stringSerde, name: 'agg' });
  await new TopologyTestDriver(app).input<string, string>('in').pipe('K', 'V', { timestamp: 5 });
  assert.deepEqual(calls, {
    timestamp: ['K', 'V', 5],
    filter: ['K', 'V', 'ctx'],
    filterNot: ['K', 'V', 'ctx'],
    peek: ['K', 'V', 'ctx'],
    dedupe: ['K', 'V'],
    latestByVersion: ['K', 'V'],
    idempotencyKey: ['K', 'V'],
    effect: ['K', 'V', 'ctx'],
    branch: ['K', 'V', 'ctx'],
    mapValues: ['V', 'ctx'],
    flatMapValues: ['v2', 'ctx'],
    selectKey: ['K', 'v3', 'ctx'],
    map: ['k2', 'v3', 'ctx'],
    flatMap: ['k3', 'v4', 'ctx'],
    groupBy: ['k4', 'v5', 'ctx'],
    aggregate: ['g', 'v5', 'init'],
  });
});

test('foreach calls its function with each record, in the stream\'s argument order, and ends the stream', () => {
  const app = new TopologyBuilder({ appId: 'fe' });
  const seen: string[] = [];
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<{ amount: number }>() });
  orders.foreach((key, order) => void seen.push(`${key}:${order.amount}`), { name: 'audit' });
  orders.to('copy');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, { amount: number }>('orders');
  input.pipe('a', { amount: 1 });
  input.pipe('b', { amount: 2 });
  assert.deepEqual(seen, ['a:1', 'b:2']);
  assert.equal(driver.output<string, { amount: number }>('copy').readValues().length, 2);
  const audit = compile(app).subtopologies[0]!.nodes.find((n) => n.name === 'audit')!;
  assert.deepEqual({ kind: audit.kind, children: audit.children }, { kind: 'foreach', children: [] });
});
