import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { TopologyTestDriver } from '../../src/testing/test-driver.ts';

interface Customer {
  readonly name: string;
  readonly segment: string;
}
interface Order {
  readonly customerId: string;
  readonly amount: number;
}
const nullableJson = <T>() => jsonSerde<T>({ nullable: true });

test('builder.table keeps the latest row per key in a store whose changelog is its source topic; a tombstone deletes the row', () => {
  const app = new TopologyBuilder({ appId: 't' });
  app.table('customers', { key: stringSerde, value: jsonSerde<Customer>(), store: 'customers' }).toStream().to('rows', { value: nullableJson<Customer>() });
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, Customer>('customers');
  input.pipe('c1', { name: 'Ann', segment: 'gold' });
  input.pipe('c2', { name: 'Bob', segment: 'basic' });
  input.pipe('c1', { name: 'Ann', segment: 'silver' });
  input.pipe('c2', null);
  const store = driver.store<string, Customer>('customers');
  assert.deepEqual(store.get('c1'), { name: 'Ann', segment: 'silver' });
  assert.equal(store.get('c2'), undefined);
  assert.deepEqual(driver.output<string, Customer | null>('rows').readKeyValues(), [
    ['c1', { name: 'Ann', segment: 'gold' }],
    ['c2', { name: 'Bob', segment: 'basic' }],
    ['c1', { name: 'Ann', segment: 'silver' }],
    ['c2', null],
  ]);
  assert.equal(driver.compiled.stores.get('customers')!.changelogTopic, 'customers', 'the source topic is the changelog');
  assert.ok(!driver.compiled.topics.some((t) => t.kind === 'changelog'), 'no extra changelog topic');
  assert.equal(driver.records('customers').length, 4, 'nothing is written back to the source topic');
});

test('table.filter deletes rejected rows downstream and table.mapValues maps live rows; stream.toTable materializes a stream', () => {
  const app = new TopologyBuilder({ appId: 't' });
  const gold = app
    .stream('customer-events', { key: stringSerde, value: jsonSerde<Customer>() })
    .toTable({ store: 'latest' })
    .filter((_id, c) => c.segment === 'gold')
    .mapValues((c) => c.name.toUpperCase(), { value: stringSerde });
  gold.toStream().to('gold-names');
  const driver = new TopologyTestDriver(app);
  const input = driver.input<string, Customer>('customer-events');
  input.pipe('c1', { name: 'ann', segment: 'gold' });
  input.pipe('c2', { name: 'bob', segment: 'basic' });
  input.pipe('c1', { name: 'ann', segment: 'basic' });
  assert.deepEqual(driver.output<string, string | null>('gold-names').readKeyValues(), [
    ['c1', 'ANN'],
    ['c2', null],
    ['c1', null],
  ]);
  assert.deepEqual(driver.store<string, Customer>('latest').get('c1'), { name: 'ann', segment: 'basic' });
});

function enrichment(mode: 'inner' | 'left') {
  const app = new TopologyBuilder({ appId: 'enrich' });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<Customer>(), store: 'customers' });
  const orders = app.stream('orders', { key: stringSerde, value: jsonSerde<Order>() });
  const joiner = (id: string | null, o: Order, c: Customer | null) => ({ id: id ?? '', amount: o.amount, segment: c?.segment ?? 'unknown' });
  const joined = mode === 'inner' ? orders.join(customers, joiner, { value: jsonSerde<ReturnType<typeof joiner>>() }) : orders.leftJoin(customers, joiner, { value: jsonSerde<ReturnType<typeof joiner>>() });
  joined.to('enriched');
  return app;
}

test('stream-table join: each order sees the customer row as of its processing, and a customer update alone emits nothing', () => {
  const driver = new TopologyTestDriver(enrichment('inner'), { partitions: 3 });
  const customers = driver.input<string, Customer>('customers');
  const orders = driver.input<string, Order>('orders');
  const out = driver.output<string, { id: string; amount: number; segment: string }>('enriched');
  orders.pipe('c1', { customerId: 'c1', amount: 5 }, { timestamp: 1 });
  customers.pipe('c1', { name: 'Ann', segment: 'gold' }, { timestamp: 2 });
  assert.equal(out.isEmpty(), true, 'an order before its customer is dropped by an inner join; the update emits nothing');
  orders.pipe('c1', { customerId: 'c1', amount: 7 }, { timestamp: 3 });
  customers.pipe('c1', { name: 'Ann', segment: 'silver' }, { timestamp: 4 });
  orders.pipe('c1', { customerId: 'c1', amount: 9 }, { timestamp: 5 });
  customers.pipe('c1', null, { timestamp: 6 });
  orders.pipe('c1', { customerId: 'c1', amount: 11 }, { timestamp: 7 });
  assert.deepEqual(out.readValues(), [
    { id: 'c1', amount: 7, segment: 'gold' },
    { id: 'c1', amount: 9, segment: 'silver' },
  ]);
});

test('stream-table leftJoin joins an order without a customer row with null', () => {
  const driver = new TopologyTestDriver(enrichment('left'));
  const customers = driver.input<string, Customer>('customers');
  const orders = driver.input<string, Order>('orders');
  orders.pipe('c1', { customerId: 'c1', amount: 5 });
  customers.pipe('c1', { name: 'Ann', segment: 'gold' });
  orders.pipe('c1', { customerId: 'c1', amount: 6 });
  customers.pipe('c1', null);
  orders.pipe('c1', { customerId: 'c1', amount: 7 });
  assert.deepEqual(driver.output<string, { segment: string }>('enriched').readValues().map((v) => v.segment), ['unknown', 'gold', 'unknown']);
});

test('a re-keyed stream is repartitioned before it joins a table, and the join result aggregates per segment', () => {
  const app = new TopologyBuilder({ appId: 'seg' });
  const customers = app.table('customers', { key: stringSerde, value: jsonSerde<Customer>() });
  app
    .stream('orders', { value: jsonSerde<Order>() })
    .selectKey((_k, o) => o.customerId, { key: stringSerde })
    .join(customers, (_id, o, c) => ({ segment: c.segment, amount: o.amount }), { name: 'order-with-customer' })
    .groupBy((_id, e) => e.segment, { key: stringSerde, value: jsonSerde<{ segment: string; amount: number }>() })
    .aggregate(() => 0, (_s, e, total) => total + e.amount, { state: jsonSerde<number>(), name: 'by-segment' })
    .toStream()
    .to('segment-totals', { value: jsonSerde<number>() });
  const driver = new TopologyTestDriver(app, { partitions: 2 });
  assert.ok(driver.compiled.topics.some((t) => t.name === 'seg-order-with-customer-repartition'));
  const customers2 = driver.input<string, Customer>('customers');
  const orders = driver.input<null, Order>('orders');
  customers2.pipe('c1', { name: 'Ann', segment: 'gold' });
  customers2.pipe('c2', { name: 'Bob', segment: 'basic' });
  orders.pipe(null, { customerId: 'c1', amount: 5 });
  orders.pipe(null, { customerId: 'c2', amount: 3 });
  customers2.pipe('c2', { name: 'Bob', segment: 'gold' });
  orders.pipe(null, { customerId: 'c2', amount: 4 });
  orders.pipe(null, { customerId: 'c3', amount: 100 });
  assert.equal(driver.store<string, number>('by-segment').get('gold'), 9);
  assert.equal(driver.store<string, number>('by-segment').get('basic'), 3);
});

test('table-table join, leftJoin and outerJoin update when either side changes; a tombstone removes the joined row', () => {
  const app = new TopologyBuilder({ appId: 'tt' });
  const left = app.table('left', { key: stringSerde, value: jsonSerde<number>() });
  const right = app.table('right', { key: stringSerde, value: jsonSerde<number>() });
  const out = jsonSerde<string>({ nullable: true });
  const show = (_k: string | null, l: number | null, r: number | null) => `${l ?? '-'}:${r ?? '-'}`;
  left.join(right, show).toStream().to('inner', { value: out });
  left.leftJoin(right, show).toStream().to('left-out', { value: out });
  left.outerJoin(right, show).toStream().to('outer', { value: out });
  const driver = new TopologyTestDriver(app);
  const l = driver.input<string, number>('left');
  const r = driver.input<string, number>('right');
  r.pipe('k', 10);
  l.pipe('k', 1);
  r.pipe('k', 20);
  l.pipe('k', null);
  r.pipe('k', null);
  assert.deepEqual(driver.output<string, string | null>('inner').readValues(), [null, '1:10', '1:20', null, null]);
  assert.deepEqual(driver.output<string, string | null>('left-out').readValues(), [null, '1:10', '1:20', null, null]);
  assert.deepEqual(driver.output<string, string | null>('outer').readValues(), ['-:10', '1:10', '1:20', '-:20', null]);
});

test('a failed transaction rolls a table back: the aborted row is never seen by a later join', () => {
  const driver = new TopologyTestDriver(enrichment('left'), { autoCommit: false });
  const customers = driver.input<string, Customer>('customers');
  const orders = driver.input<string, Order>('orders');
  customers.pipe('c1', { name: 'Ann', segment: 'gold' });
  driver.commit();
  customers.pipe('c1', { name: 'Ann', segment: 'silver' });
  driver.abort();
  orders.pipe('c1', { customerId: 'c1', amount: 1 });
  driver.commit();
  assert.deepEqual(driver.output<string, { segment: string }>('enriched').readValues().map((v) => v.segment), ['gold']);
});

test('joining two tables whose keys are encoded differently is a compile error', () => {
  const app = new TopologyBuilder({ appId: 'bad' });
  const t = app.table('a', { key: stringSerde, value: jsonSerde<number>() });
  const u = app.table('b', { key: jsonSerde<string>(), value: jsonSerde<number>() });
  t.join(u, (_k, x, y) => x + y);
  assert.throws(() => new TopologyTestDriver(app), (e: unknown) => (e as { code?: string }).code === 'JOIN_KEY_SERDE_MISMATCH');
});
