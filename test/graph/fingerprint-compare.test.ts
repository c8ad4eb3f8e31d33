import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { fingerprintOf, isGeneratedName, type TopologyFingerprint } from '../../src/graph/fingerprint.ts';
import { compareFingerprints, unresolvedChanges, type ChangeClass } from '../../src/graph/fingerprint-compare.ts';
import { formatGeneratedName, generatedNames, generatedNameWarnings } from '../../src/graph/generated-names.ts';
import { avroSerde, jsonSerde, stringSerde } from '../../src/serdes/index.ts';

interface Order {
  readonly customer: string;
  readonly region: string;
  readonly amount: number;
}

interface Variant {
  readonly store?: string;
  readonly state?: 'json' | 'avro-long' | 'avro-double';
  readonly groupKey?: 'customer' | 'region';
  readonly stageBefore?: boolean;
  readonly filterAbove?: 10;
  readonly mapAfter?: boolean;
  readonly storeName?: 'given' | 'generated';
}

const avroTotal = (type: 'long' | 'double') => avroSerde<number>({ schema: { type: 'record', name: 'Total', fields: [{ name: 'sum', type }] } as never });

/** Totals of order amounts per customer: the variants change one thing each. */
function totals(v: Variant = {}): TopologyBuilder {
  const app = new TopologyBuilder({ appId: 'shop' });
  let orders = app.stream('orders', { key: stringSerde, value: jsonSerde<Order>() });
  if (v.stageBefore) orders = orders.peek(() => undefined);
  const state = v.state === 'avro-long' ? avroTotal('long') : v.state === 'avro-double' ? avroTotal('double') : jsonSerde<number>();
  const grouped = orders
    // Two texts: the fingerprint hashes a function's source, not the values it closes over.
    .filter(v.filterAbove === undefined ? (_k, o) => o.amount > 0 : (_k, o) => o.amount > 10)
    .groupBy(v.groupKey === 'region' ? (_k, o) => o.region : (_k, o) => o.customer, { key: stringSerde, value: jsonSerde<Order>() });
  const opts = v.storeName === 'generated' ? { state } : { state, store: v.store ?? 'totals' };
  let out = grouped.aggregate(() => 0, (_k, o, sum) => sum + o.amount, opts as never).toStream();
  if (v.mapAfter) out = out.mapValues((sum) => Number(sum) * 100);
  out.to('totals-out', { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

const fingerprint = (v: Variant = {}, partitions = 4): TopologyFingerprint => {
  const compiled = compile(totals(v));
  const plan = compiled.resolvePartitions({ orders: partitions });
  return fingerprintOf(compiled, new Map(plan.topics.filter((t) => t.partitions !== undefined).map((t) => [t.name, t.partitions!] as const)));
};

const classes = (changes: readonly { readonly classification: ChangeClass }[]): ChangeClass[] => changes.map((c) => c.classification);

test('the same topology compiled twice has the same fingerprint, and nothing to report', () => {
  const a = fingerprint();
  assert.deepEqual(fingerprint(), a);
  assert.deepEqual(compareFingerprints(a, fingerprint()), []);
  // the fingerprint is what the worker records: it must survive JSON
  assert.deepEqual(compareFingerprints(JSON.parse(JSON.stringify(a)) as TopologyFingerprint, fingerprint()), []);
});

test('a renamed store is breaking until its state is reset: the old state would be orphaned', () => {
  const changes = compareFingerprints(fingerprint(), fingerprint({ store: 'order-totals' }));
  const rename = changes.find((c) => c.what === 'store totals renamed to order-totals');
  assert.ok(rename, JSON.stringify(changes));
  assert.equal(rename.classification, 'breaking');
  assert.match(rename.reason, /orphaned/);
  assert.equal(rename.store, 'order-totals');
  assert.equal(rename.formerChangelog, 'shop-totals-changelog');
  // the repartition topic renamed with it goes with the store: records still in it are never read
  assert.ok(changes.some((c) => c.what === 'repartition topic shop-totals-repartition no longer used' && c.classification === 'breaking'));
  assert.deepEqual(unresolvedChanges(changes, new Set(['order-totals'])), []);
  assert.deepEqual(unresolvedChanges(changes, new Set(['totals'])), []);
  assert.ok(unresolvedChanges(changes, new Set()).length > 0);
});

test("a store's serde changed is breaking; an Avro schema change under the same serde name is seen through its hash", () => {
  const toAvro = compareFingerprints(fingerprint(), fingerprint({ state: 'avro-long' }));
  assert.deepEqual(classes(toAvro), ['breaking']);
  assert.match(toAvro[0]!.what, /^store totals: value serde json -> avro:Total \(schema [0-9a-f]{12}\)$/);
  assert.equal(toAvro[0]!.store, 'totals');
  const schema = compareFingerprints(fingerprint({ state: 'avro-long' }), fingerprint({ state: 'avro-double' }));
  assert.deepEqual(classes(schema), ['breaking']);
  assert.match(schema[0]!.what, /avro:Total \(schema .*\) -> avro:Total \(schema .*\)/);
  assert.deepEqual(unresolvedChanges(schema, new Set(['totals'])), []);
});

test('a groupBy key changed is breaking: the store holds state under the old keys', () => {
  const changes = compareFingerprints(fingerprint(), fingerprint({ groupKey: 'region' }));
  const key = changes.find((c) => c.what.startsWith('repartition topic shop-totals-repartition: key derivation'));
  assert.ok(key, JSON.stringify(changes));
  assert.equal(key.classification, 'breaking');
  assert.equal(key.store, 'totals');
  assert.deepEqual(unresolvedChanges(changes, new Set(['totals'])), []);
});

test('a stage added before a generated store name shifts it: breaking, and the warning names the generated store', () => {
  const before = fingerprint({ storeName: 'generated' });
  const after = fingerprint({ storeName: 'generated', stageBefore: true });
  const store = before.stores[0]!;
  assert.equal(store.named, false);
  assert.ok(isGeneratedName(store.name));
  const changes = compareFingerprints(before, after);
  const shifted = changes.find((c) => c.what.startsWith('store KSTREAM-AGGREGATE-STATE-STORE-'));
  assert.ok(shifted, JSON.stringify(changes));
  assert.equal(shifted.classification, 'breaking');
  assert.match(shifted.reason, /a stage added or removed before stage/);
  assert.notEqual(shifted.store, shifted.formerStore);
  assert.deepEqual(unresolvedChanges(changes, new Set([shifted.store!])), [], 'its reset resolves it, its shifted repartition topic included');
});

test('a partition count changed on the source of a stateful sub-topology is breaking; on a stateless one compatible', () => {
  const changes = compareFingerprints(fingerprint({}, 4), fingerprint({}, 6));
  const internal = changes.find((c) => c.what === 'repartition topic shop-totals-repartition: 4 -> 6 partitions');
  assert.ok(internal, JSON.stringify(changes));
  assert.equal(internal.classification, 'breaking');
  assert.equal(internal.store, undefined, 'the existing repartition topic keeps its count: no store reset resolves it');
  const source = changes.find((c) => c.what === 'source orders: 4 -> 6 partitions');
  assert.ok(source);
  assert.equal(source.classification, 'compatible', 'the sub-topology reading orders only filters and re-keys');
});

test('a stateless change (a filter predicate, a map after the last store) is compatible', () => {
  const filter = compareFingerprints(fingerprint(), fingerprint({ filterAbove: 10 }));
  assert.deepEqual(classes(filter), ['compatible']);
  assert.match(filter[0]!.what, /sub-topology 0 \(orders\): stages changed/);
  const map = compareFingerprints(fingerprint(), fingerprint({ mapAfter: true }));
  assert.deepEqual(classes(map), ['compatible']);
  assert.deepEqual(unresolvedChanges([...filter, ...map], new Set()), []);
});

test('a store added on input already consumed is state-resetting; removed, compatible', () => {
  const app = (withCount: boolean): TopologyFingerprint => {
    const b = new TopologyBuilder({ appId: 'shop' });
    const orders = b.stream('orders', { key: stringSerde, value: jsonSerde<Order>() });
    orders.to('copy', { key: stringSerde, value: jsonSerde<Order>() });
    if (withCount) orders.groupByKey().count({ store: 'per-customer' }).toStream().to('counts', { key: stringSerde, value: jsonSerde<number>() });
    return fingerprintOf(compile(b));
  };
  const added = compareFingerprints(app(false), app(true));
  const store = added.find((c) => c.what.startsWith('store per-customer added'));
  assert.equal(store?.classification, 'state-resetting');
  assert.deepEqual(unresolvedChanges(added, new Set(['per-customer'])), []);
  const removed = compareFingerprints(app(true), app(false));
  assert.equal(removed.find((c) => c.what === 'store per-customer removed')?.classification, 'compatible');
  assert.deepEqual(unresolvedChanges(removed, new Set()), []);
});

test('generated store and topic names are warned about, naming the stage and how to name it; given ones are not', () => {
  const generated = generatedNames(fingerprint({ storeName: 'generated' }));
  assert.deepEqual(generated.map((g) => [g.what, g.stage]), [['store', 'KSTREAM-AGGREGATE-0000000003']]);
  assert.match(formatGeneratedName(generated[0]!), /^store KSTREAM-AGGREGATE-STATE-STORE-0000000003 has a generated name: a stage added before stage KSTREAM-AGGREGATE-0000000003 would rename it .*\{ name: '…' \} or \{ store: '…' \}/);
  assert.deepEqual(generatedNames(fingerprint()), []);
  const app = new TopologyBuilder({ appId: 'shop' });
  app.stream('orders', { key: stringSerde, value: jsonSerde<Order>() }).repartition({ key: stringSerde, value: jsonSerde<Order>() }).to('copy', { key: stringSerde, value: jsonSerde<Order>() });
  assert.deepEqual(generatedNameWarnings(compile(app)).length, 1);
  assert.match(generatedNameWarnings(compile(app))[0]!, /^repartition topic shop-KSTREAM-REPARTITION-0000000001-repartition has a generated name: .*repartition\(\{ name: '…' \}\)/);
});
